package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// Compaction before the provider refuses (issue #20): when the last
// request's usage says the context window is nearly full, the turn compacts
// before its next request, with the overflow recovery's code (compact), so
// the request that would overflow is never sent. The overflow recovery stays
// the backstop: for a window Rebound does not know, a summary still too big,
// or a step that grew the context past the window on its own.

// compactIfFull compacts the history before the turn's next request when
// the last known usage has reached Overflow.CompactAt of the model's window:
// at most once a turn (a summary still over the fill must not loop), never
// with the window unknown. It returns the new history, or nil when it did
// not replace it. The editor is shown it as an overflow's compaction is
// (compaction_update; a notice or status tool call while the summary is
// made), and the log records it the same way (compaction). A compaction
// that fails (a summary that did not finish is one) or would not be smaller
// is logged and shown (a notice or the status tool call), and the request
// goes out as it is: the provider may still take it, and the overflow
// recovery remains.
func (c *compactor) compactIfFull(ctx context.Context, in compaction) []llm.Message {
	at := c.overflow.CompactAt
	if at <= 0 || *c.fullTurn == c.turn {
		return nil
	}
	used, known := c.lastFill()
	size := windowOf(in.model, c.window(in.model))
	if !known || !shouldCompact(used, size, at) {
		return nil
	}
	*c.fullTurn = c.turn
	pct := int(float64(used) * 100 / float64(size))
	log := c.log.With().Str("session", c.sessionID).Int("turn", c.turn).
		Uint64("used", used).Uint64("size", size).Float64("compactAt", at).Logger()
	log.Info().Msg("the context is nearly full: compacting before the next request")

	subject := fmt.Sprintf("The conversation is nearly full (%d%% of the model's context)", pct)
	if c.ed.statusNotices() {
		c.ed.notify(ctx, acp.Notice("info", subject,
			"Summarising older messages before the next request"))
	}
	st := &waitStatus{subject: subject}
	c.ed.showStatus(ctx, st, subject+", summarising older messages", "", acp.ToolStatusInProgress)
	in.start = time.Now() // summaryLimit counts request_deadline from here
	history, err := c.compact(ctx, in)
	switch {
	case err == nil:
		c.ed.showStatus(ctx, st, subject+", summarised", "", acp.ToolStatusCompleted)
	case isCancelled(ctx):
		c.ed.showStatus(ctx, st, subject+", cancelled", "", acp.ToolStatusFailed)
	default:
		if recorded(err) {
			// The log took no compaction: the request goes on, and
			// its own records say whether the log works.
			log.Error().Err(err).Msg("could not record the compaction; sending the request uncompacted")
		} else {
			log.Warn().Err(err).Msg("could not compact before the request; sending it as it is")
		}
		why, severity := "could not summarise, sending it as it is", "warning"
		if errors.Is(err, ErrCompactionNotSmaller) || errors.Is(err, ErrPromptTooLong) {
			why, severity = "nothing to summarise, sending it as it is", "info"
		}
		c.ed.showStatus(ctx, st, subject+", "+why, err.Error(), acp.ToolStatusFailed)
		if c.ed.statusNotices() {
			// The info notice said a summary was being made: this one says
			// none replaced the history, and why (a summary cut at the
			// output limit is never used).
			c.ed.notify(ctx, acp.Notice(severity, subject+", "+why,
				err.Error()))
		}
	}
	return history
}

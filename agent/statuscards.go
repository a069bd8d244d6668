package agent

import (
	"context"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// statusCards are a turn's status tool calls, the editor's half of the
// recovery observer: each change of a card is recorded, then shown, and its
// title and content (recovery/words.go) always say the same state. It
// depends on a recorder and a sender only, so a test drives it with fakes.
type statusCards struct {
	turn int
	// record writes a status event; an error is the recorder's to report:
	// the card is shown all the same, since a wait left unshown looks like
	// a hang, and a log that cannot be written fails the turn at its next
	// record.
	record func(session.Status) error
	// send shows an update; nil where statuses are not shown as tool calls
	// (they are recorded all the same, for a load to show).
	send   func(context.Context, acp.SessionUpdate)
	chains map[string]*waitStatus // retry chains' cards, by chain id
}

// waitStatus is one status tool call: a retry chain's, or another wait's.
type waitStatus struct {
	id      string
	subject string            // what happened, e.g. "Rate limited by the provider (429)"
	words   *recovery.Wording // a retry's words; nil for another wait
	running bool              // the retry's wait is over and its request runs
	open    bool              // in_progress: not yet completed or failed
}

// showStatus records a card's state, then sends it as a status tool call,
// or updates the one already shown. A card opened again after it was
// closed is a new tool call: an editor would fold two into one under one
// id. Every update carries the content, so none is left from an earlier
// state.
func (c *statusCards) showStatus(ctx context.Context, st *waitStatus, title, detail string, status acp.ToolCallStatus) {
	c.show(ctx, st, title, detail, &shownWords{title, detail}, status)
}

// shownWords are what a card shows live when that differs from what is
// recorded for a replay.
type shownWords struct{ title, detail string }

// show records a card's state with title and detail, then sends it with
// shown's words; a nil shown records it only.
func (c *statusCards) show(ctx context.Context, st *waitStatus, title, detail string, shown *shownWords, status acp.ToolCallStatus) {
	first := st.id == "" || !st.open && status == acp.ToolStatusInProgress
	if first {
		st.id = newID(statusIDPrefix)
	}
	st.open = status == acp.ToolStatusInProgress
	_ = c.record(session.Status{Turn: c.turn, StatusID: st.id, Title: statusTitle(title),
		Detail: clipBytes(detail, session.MaxStatusBytes), State: string(status)})
	if c.send == nil || shown == nil {
		return
	}
	title, detail = inertCard(statusTitle(shown.title)), inertCard(shown.detail)
	tc := acp.ToolCallUpdate{ToolCallID: st.id, Title: title, Status: status}
	if detail != "" {
		tc.Content = []acp.ToolCallContent{acp.ContentText(detail)}
	}
	u := tc.AsUpdate()
	if first {
		tc.Kind = acp.ToolKindOther
		u = tc.AsStart()
	}
	c.send(ctx, u)
}

// chain is the card of the retry chain id, made on first use.
func (c *statusCards) chain(id string) *waitStatus {
	st := c.chains[id]
	if st == nil {
		st = &waitStatus{}
		c.chains[id] = st
	}
	return st
}

// scheduled shows a retry about to wait: why, until when, which retry of
// how many.
func (c *statusCards) scheduled(ctx context.Context, w recovery.Wording) {
	st := c.chain(w.Retry.ID)
	st.subject, st.words, st.running = w.Subject(), &w, false
	title, body := w.Scheduled()
	c.showStatus(ctx, st, title, body, acp.ToolStatusInProgress)
}

// started shows that the wait is over and the retry runs.
func (c *statusCards) started(ctx context.Context, r recovery.Retry) {
	st := c.chains[r.ID]
	if st == nil || !st.open || st.words == nil {
		return
	}
	st.running = true
	if r.Delay == 0 {
		return // nothing was waited for: the next word is the outcome
	}
	title, body := st.words.Started()
	c.showStatus(ctx, st, title, body, acp.ToolStatusInProgress)
}

// recovered closes the open cards of a request that succeeded.
func (c *statusCards) recovered(ctx context.Context) {
	for _, st := range c.chains {
		if st.open && st.words != nil {
			title, body := st.words.Recovered()
			c.showStatus(ctx, st, title, body, acp.ToolStatusCompleted)
		}
	}
}

// ended closes the open cards of a turn that was cancelled or failed (why
// is the failed prompt's error message). Title and body say the same end: a
// client that stops drawing a cancelled turn's titles (codecompanion) shows
// the body.
func (c *statusCards) ended(ctx context.Context, cancelled bool, why string) {
	if !cancelled {
		c.gaveUp(ctx, why)
		return
	}
	for _, st := range c.chains {
		if !st.open {
			continue
		}
		if st.words == nil {
			c.showStatus(ctx, st, st.subject+", cancelled", "Cancelled.", acp.ToolStatusFailed)
			continue
		}
		title, body := st.words.Cancelled(st.running)
		c.showStatus(ctx, st, title, body, acp.ToolStatusFailed)
	}
}

// gaveUp ends the cards of a turn that failed with the error message why.
// Every client shows the prompt's error, so live a card does not say it
// again: a retry chain's card ends short ("…; gave up after 2 retries", see
// the error below), and a failure with no card open shows none. Each is
// recorded with why in full: a replay has no error answer, and the card is
// where a reopened thread reads why the turn failed.
func (c *statusCards) gaveUp(ctx context.Context, why string) {
	shown := false
	for _, st := range c.chains {
		if !st.open {
			continue
		}
		shown = true
		live := &shownWords{why, why}
		if st.words != nil {
			t, b := st.words.GaveUp()
			live = &shownWords{t, b}
		}
		c.show(ctx, st, why, why, live, acp.ToolStatusFailed)
	}
	if !shown && why != "" {
		c.show(ctx, &waitStatus{}, why, why, nil, acp.ToolStatusFailed)
	}
}

// failed closes the open cards with title and body, or shows a card of its
// own when none is open.
func (c *statusCards) failed(ctx context.Context, title, body string) {
	if !c.closeOpen(ctx, title, body) {
		c.showStatus(ctx, &waitStatus{}, title, body, acp.ToolStatusFailed)
	}
}

// closeOpen fails the open cards with title and body, and says whether
// there were any.
func (c *statusCards) closeOpen(ctx context.Context, title, body string) bool {
	shown := false
	for _, st := range c.chains {
		if st.open {
			shown = true
			c.showStatus(ctx, st, title, body, acp.ToolStatusFailed)
		}
	}
	return shown
}

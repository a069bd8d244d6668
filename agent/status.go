package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/acp"
	clip "github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// How waits and give-ups are shown (agent.wait_status). The machine-readable
// _meta["rebound/retry"] on session_info_update goes to every client
// whatever the choice.
const (
	// WaitStatusAuto: a notice to clients that advertise session.notices,
	// the status tool call to the others.
	WaitStatusAuto = "auto"
	// WaitStatusNotice: notices only, to the clients that show them.
	WaitStatusNotice = "notice"
	// WaitStatusToolCall: the status tool call for every client.
	WaitStatusToolCall = "tool_call"
	// WaitStatusMeta: only the _meta.
	WaitStatusMeta = "meta"
)

// WaitStatuses are the values agent.wait_status takes.
var WaitStatuses = []string{WaitStatusAuto, WaitStatusNotice, WaitStatusToolCall, WaitStatusMeta}

// Most editors show nothing for a notice they were not offered, so a wait
// would look like a hang. Every ACP v1 client renders a tool call with a
// title and a status, so that is the status's carrier there: a tool call of
// Rebound's own, never recorded as one (it is not in the model's history),
// never part of the reply's text or messageId. Each change of a status is
// recorded (a status event) before it is shown, whatever the client's
// carrier, so a load shows every status as it was last shown, under its id;
// a give-up's card as recorded, in the words of the error the live turn
// answered, which the replay has not (statuscards.go gaveUp).

// statusIDPrefix starts the toolCallId of a status tool call, so a client
// (or a test) can tell them from the model's calls: it is in Rebound's
// namespace, which no call of the model's has (reboundIDPrefix).
const statusIDPrefix = reboundIDPrefix + "status_"

// maxStatusTitle bounds a status title: a provider's reason can be long.
const maxStatusTitle = 200

// statusNoticesFor reports whether waits are shown as notices to a client
// with caps, for the choice of agent.wait_status.
func statusNoticesFor(choice string, caps acp.ClientCapabilities) bool {
	switch choice {
	case WaitStatusNotice, WaitStatusAuto, "":
		return caps.Notices()
	}
	return false
}

// statusCallsFor reports whether waits are shown as status tool calls.
func statusCallsFor(choice string, caps acp.ClientCapabilities) bool {
	switch choice {
	case WaitStatusToolCall:
		return true
	case WaitStatusAuto, "":
		return !caps.Notices()
	}
	return false
}

// clipBytes cuts s to at most n bytes, at a rune boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Status titles put what happened first and keep the rest short, with no
// colon early on: codecompanion.nvim shows at most 60 characters of a tool
// call's title, and only what comes before a colon in its first 40
// (recovery/words.go words them).

// statusTitle fits a title on a line.
func statusTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxStatusTitle {
		s = string([]rune(s)[:maxStatusTitle-1]) + "…"
	}
	return s
}

// replayStatuses sends the statuses of waits recorded before seq (all of
// them when seq is 0) and returns the rest, so a reopened thread shows
// each where it happened: between the messages around it.
func replayStatuses(ctx context.Context, c acp.Client, sessionID string, waits []session.WaitStatus, seq int64, open *turnReplay, giveUps map[int]string) ([]session.WaitStatus, error) {
	for len(waits) > 0 && (seq == 0 || waits[0].Seq < seq) {
		u := replayedStatus(waits[0])
		if open.isGiveUp(u, giveUps) {
			// The turn's last line says it (turnReplay.end), as the
			// prompt's error did live: not twice.
			waits = waits[1:]
			continue
		}
		if err := c.Update(ctx, sessionID, inertStatus(u)); err != nil {
			return nil, err
		}
		// A tool call: every client shows it apart from the prompt.
		open.status, open.statusLast, open.cut = true, true, false
		waits = waits[1:]
	}
	return waits, nil
}

// inertCard is a card's title or content as the editor is sent it: it
// quotes a provider's words (its message, the error a turn failed with),
// and an editor renders it as markdown (Zed), so a link or an image in
// them must show as the text it is (internal/text.InertMarkdown). What
// is recorded keeps the words as they were.
func inertCard(s string) string { return clip.InertMarkdown(s) }

// inertStatus is a replayed card as sent, made inert as a live one is.
func inertStatus(u acp.SessionUpdate) acp.SessionUpdate {
	u.Title = inertCard(u.Title)
	content := slices.Clone(u.ToolContent)
	for i, c := range content {
		if c.Content != nil {
			shown := *c.Content
			shown.Text = inertCard(shown.Text)
			content[i].Content = &shown
		}
	}
	u.ToolContent = content
	return u
}

// replayedStatus is a recorded status as the editor saw it last: as
// recorded, under the id it had live, or in a log written before statuses
// were recorded, rebuilt from the wait's derivation (session.Recoveries)
// in the words a live status would have ended with (recovery/words.go).
func replayedStatus(w session.WaitStatus) acp.SessionUpdate {
	if sh := w.Shown; sh != nil {
		return replayedShown(w, sh)
	}
	u := acp.ToolCallUpdate{ToolCallID: fmt.Sprintf("%sreplay_%d", statusIDPrefix, w.Seq),
		Kind: acp.ToolKindOther, Status: acp.ToolStatusFailed}.AsStart()
	failed := failureOf(w.Error)
	gaveUp := ""
	if failed != nil {
		gaveUp = failed.Summary()
		if failed.Message != "" {
			gaveUp += ": " + failed.Message
		}
	}
	var title, body string
	c := w.Chain
	if c == nil {
		title, body = gaveUp, gaveUp
	} else {
		l := c.Last
		words := recovery.Wording{Retry: recovery.Retry{ID: l.RetryID, N: l.Retry, Max: l.MaxRetries, Policy: l.Policy,
			PolicyN: l.PolicyRetry, Action: recovery.Action(l.Action), Delay: time.Duration(l.DelayMs) * time.Millisecond,
			Failure: failureOf(l.Failure)}, Model: l.Model}
		switch w.Outcome {
		case session.WaitRecovered:
			u.Status = string(acp.ToolStatusCompleted)
			title, body = words.Recovered()
		case session.WaitFailed:
			if failed != nil { // the give-up's own failure, as live
				words.Retry.Failure = failed
			}
			msg := ""
			if failed != nil {
				msg = failed.Message
			}
			title = words.GaveUpAfter(c.Retries, msg)
			body = title
		case session.WaitCancelled:
			title, body = words.Cancelled(c.Waits[len(c.Waits)-1].End == session.WaitEndDone)
		default:
			title, body = words.Interrupted()
		}
	}
	u.Title = statusTitle(title)
	if body != "" {
		u.ToolContent = []acp.ToolCallContent{acp.ContentText(body)}
	}
	return u
}

// replayedShown is a recorded status as last shown: one left in progress
// ends as the turn did, in title and body alike.
func replayedShown(w session.WaitStatus, sh *session.Status) acp.SessionUpdate {
	id := sh.StatusID
	if !strings.HasPrefix(id, statusIDPrefix) {
		// Not Rebound's (a hand-edited log): it must not pass for a
		// call of the model's.
		id = fmt.Sprintf("%sreplay_%d", statusIDPrefix, w.Seq)
	}
	title, body := sh.Title, sh.Detail
	state := acp.ToolCallStatus(sh.State)
	if sh.State == string(acp.ToolStatusInProgress) {
		// The turn ended while it was shown in progress: only a stop
		// of Rebound leaves one so.
		state = acp.ToolStatusFailed
		if w.Outcome == session.WaitInterrupted {
			title = sh.Title + ", " + recovery.Interrupted
			body = "Rebound stopped while this was in progress; the next prompt goes on from it." + providerSaid(sh.Detail)
		}
	}
	u := acp.ToolCallUpdate{ToolCallID: id, Kind: acp.ToolKindOther, Title: statusTitle(title), Status: state}.AsStart()
	if body != "" {
		u.ToolContent = []acp.ToolCallContent{acp.ContentText(body)}
	}
	return u
}

// providerSaid is the last paragraph a status's body ends with
// (recovery.Said), with the blank line before it; "" if none.
func providerSaid(detail string) string {
	for _, p := range []string{"\n\nThe provider said: ", "\n\nWhat happened: "} {
		if i := strings.Index(detail, p); i >= 0 {
			return detail[i:]
		}
	}
	return ""
}

// failureOf decodes recorded failure facts; nil when there are none or
// they do not decode.
func failureOf(raw json.RawMessage) *recovery.Failure {
	var f recovery.Failure
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || f.Code == "" {
		return nil
	}
	return &f
}

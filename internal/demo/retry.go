package demo

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// retryWait is a retry wait the editor was told about.
type retryWait struct {
	p       recovery.RetryProgress
	failure string    // the failure in a few words (failureWords)
	at      time.Time // when the scheduled update arrived
}

// failureWords is a failure in a few lower-case words, as a status line
// shows it: "rate limited (429)". The words come from the structured facts
// of `_meta["rebound/retry"]` (the action, the failure's code and HTTP
// status), never from the failure's message, which is written for people
// and may be reworded; a timeout's limit tells a stalled stream from a
// missing first token.
func failureWords(p recovery.RetryProgress) string {
	switch p.Action {
	case string(recovery.ActionEscalate), string(recovery.ActionContinue):
		return "reply cut at the output limit"
	case string(recovery.ActionStripImages):
		return "the model does not accept images"
	}
	f := p.Failure
	if f == nil {
		return "the request failed"
	}
	status := ""
	if f.Status != 0 {
		status = " (" + strconv.Itoa(f.Status) + ")"
	}
	switch f.Code {
	case recovery.RateLimit:
		return "rate limited" + status
	case recovery.Overloaded:
		return "overloaded" + status
	case recovery.Server:
		return "server error" + status
	case recovery.Timeout:
		// Which limit fired reads better than "timed out"; an HTTP 408 is
		// the provider's own.
		switch f.Limit {
		case recovery.LimitIdle:
			return "stream stalled (idle timeout)"
		case recovery.LimitFirstToken:
			return "no first token (timeout)"
		case recovery.LimitAttempt:
			return "request too long (attempt timeout)"
		}
		return "timed out" + status
	case recovery.Transport:
		return "connection dropped"
	case recovery.EmptyResponse:
		return "empty reply"
	case recovery.ContextOverflow:
		return "conversation too long" + status
	case recovery.Auth:
		return "API key rejected" + status
	case recovery.Quota:
		return "out of quota" + status
	case recovery.InvalidRequest:
		return "request rejected" + status
	case recovery.Protocol:
		return "malformed reply"
	case recovery.Aborted:
		return "cancelled"
	}
	return "request failed" + status
}

// text is the wait's status line. timing is "retrying in 1.0s", "retried
// after 1.0s" and the like; "" leaves it out.
func (w *retryWait) text(timing string) string {
	p := w.p
	n := p.PolicyRetry // the retry's number within its policy's budget
	if n == 0 {
		n = p.Retry
	}
	parts := []string{w.failure}
	switch p.Action {
	case string(recovery.ActionFallback):
		parts = append(parts, "switching to "+p.Model)
	case string(recovery.ActionEscalate):
		parts = append(parts, "retrying with a larger output budget")
	case string(recovery.ActionContinue):
		parts = append(parts, "asking the model to continue ("+recovery.PartOf(n+1, p.MaxRetries+1)+")")
	case string(recovery.ActionCompact):
		parts = append(parts, "summarising older messages")
	case string(recovery.ActionStripImages):
		parts = append(parts, "retrying without them")
	}
	if timing != "" {
		parts = append(parts, timing)
	}
	if p.Action == "" && (p.Policy == "" || p.Policy == "transient" || strings.HasPrefix(p.Policy, "rule")) {
		parts = append(parts, recovery.RetryOf(n, p.MaxRetries)) // recovery/words.go: retries, as everywhere
	}
	return strings.Join(parts, " · ")
}

func (w *retryWait) delay() time.Duration { return time.Duration(w.p.DelayMs) * time.Millisecond }

// scheduledTiming is the countdown: remaining time of the wait.
func (w *retryWait) scheduledTiming(now time.Time) string {
	if w.p.DelayMs <= 0 {
		return ""
	}
	left := max(w.delay()-now.Sub(w.at), 0)
	return fmt.Sprintf("retrying in %.1fs", left.Seconds())
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

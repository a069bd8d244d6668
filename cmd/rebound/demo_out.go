package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/rebound-agent/rebound/agent"
)

// demoIsTerminal reports whether w is a terminal, where the live line is
// redrawn in place; tests replace it.
var demoIsTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// ANSI styles.
const (
	demoBold   = "1"
	demoDim    = "2"
	demoRed    = "31"
	demoGreen  = "32"
	demoYellow = "33"
	demoCyan   = "36"
	demoBoldGr = "1;32"
	demoBoldCy = "1;36"
)

// demoOut is the terminal the demo prints to. On a terminal one live line
// (a countdown, a spinner) is redrawn in place under the printed lines;
// elsewhere every event is one plain line and nothing is redrawn.
type demoOut struct {
	w     io.Writer
	tty   bool
	color bool

	live      bool // a live line is drawn (tty only)
	replyOpen bool // a reply is being printed; the cursor is mid-line
	err       error
}

func (o *demoOut) write(s string) {
	if o.err == nil {
		_, o.err = io.WriteString(o.w, s)
	}
}

// c styles s when colour is on.
func (o *demoOut) c(style, s string) string {
	if !o.color || s == "" {
		return s
	}
	return "\x1b[" + style + "m" + s + "\x1b[0m"
}

func (o *demoOut) clearLive() {
	if o.live {
		o.write("\r\x1b[2K")
		o.live = false
	}
}

// endReply finishes a reply's line.
func (o *demoOut) endReply() {
	if o.replyOpen {
		o.write("\n")
		o.replyOpen = false
	}
}

// line prints a whole line above the live line.
func (o *demoOut) line(format string, args ...any) {
	o.clearLive()
	o.endReply()
	o.write(fmt.Sprintf(format, args...) + "\n")
}

// setLive draws the live line in place (terminals only).
func (o *demoOut) setLive(s string) {
	if !o.tty || o.replyOpen {
		return
	}
	o.write("\r\x1b[2K" + s)
	o.live = true
}

// replyText prints committed reply text as it arrives.
func (o *demoOut) replyText(s string) {
	if !o.replyOpen {
		o.clearLive()
		o.write(o.c(demoBoldGr, "rebound:") + " ")
		o.replyOpen = true
	}
	o.write(s)
}

// demoWait is a retry wait the editor was told about.
type demoWait struct {
	p  demoRetryMeta
	at time.Time // when the scheduled update arrived
}

// demoRetryMeta is `_meta["rebound/retry"]` of a session update, read into
// the type the agent writes it from.
type demoRetryMeta = agent.RetryProgress

// demoFailureSummary is a failure in a few lower-case words, as a status
// line shows it: "rate limited (429)".
func demoFailureSummary(p demoRetryMeta) string {
	switch p.Action {
	case "escalate", "continue":
		return "reply cut at the output limit"
	case "strip_images":
		return "the model does not accept images"
	}
	f := p.Failure
	if f == nil {
		return "the request failed"
	}
	status := ""
	if f.Status != 0 {
		status = fmt.Sprintf(" (%d)", f.Status)
	}
	switch f.Code {
	case "RATE_LIMIT":
		return "rate limited" + status
	case "OVERLOADED":
		return "overloaded" + status
	case "SERVER":
		return "server error" + status
	case "TIMEOUT":
		// Display only: which watchdog fired reads better than "timed out".
		switch {
		case strings.Contains(f.Message, "stream_idle_timeout"):
			return "stream stalled (idle timeout)"
		case strings.Contains(f.Message, "first_token_timeout"):
			return "no first token (timeout)"
		}
		return "timed out" + status
	case "TRANSPORT":
		return "connection dropped"
	case "EMPTY_RESPONSE":
		return "empty reply"
	case "CONTEXT_OVERFLOW":
		return "conversation too long" + status
	case "AUTH":
		return "API key rejected" + status
	case "QUOTA":
		return "out of quota" + status
	case "INVALID_REQUEST":
		return "request rejected" + status
	case "PROTOCOL":
		return "malformed reply"
	case "ABORTED":
		return "cancelled"
	}
	return "request failed" + status
}

// text is the wait's status line. timing is "retrying in 1.0s", "retried
// after 1.0s" and the like; "" leaves it out.
func (w *demoWait) text(timing string) string {
	p := w.p
	n := p.PolicyRetry // the retry's number within its policy's budget
	if n == 0 {
		n = p.Retry
	}
	parts := []string{demoFailureSummary(p)}
	switch p.Action {
	case "fallback":
		parts = append(parts, "switching to "+p.Model)
	case "escalate":
		parts = append(parts, "retrying with a larger output budget")
	case "continue":
		parts = append(parts, fmt.Sprintf("asking the model to continue (part %d of at most %d)", n+1, p.MaxRetries+1))
	case "compact":
		parts = append(parts, "summarising older messages")
	case "strip_images":
		parts = append(parts, "retrying without them")
	}
	if timing != "" {
		parts = append(parts, timing)
	}
	if p.Action == "" && (p.Policy == "" || p.Policy == "transient" || strings.HasPrefix(p.Policy, "rule")) {
		parts = append(parts, fmt.Sprintf("attempt %d of %d", n+1, p.MaxRetries+1))
	}
	return strings.Join(parts, " · ")
}

func (w *demoWait) delay() time.Duration { return time.Duration(w.p.DelayMs) * time.Millisecond }

// scheduledTiming is the countdown: remaining time of the wait.
func (w *demoWait) scheduledTiming(now time.Time) string {
	if w.p.DelayMs <= 0 {
		return ""
	}
	left := max(w.delay()-now.Sub(w.at), 0)
	return fmt.Sprintf("retrying in %.1fs", left.Seconds())
}

func demoSeconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

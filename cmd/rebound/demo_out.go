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
//
// A reply is printed as it streams, on its "rebound:" line. When a retry
// interrupts it (live mode: the stream dropped after text was shown, or the
// reply was cut at the output limit), the reply must still read as one:
//
//   - on a terminal the reply's line is kept: the cursor's place at its end
//     is saved, the countdown is drawn on the line below, and when the reply
//     goes on, the live line is cleared and the text continues where it
//     stopped. The retries are noted under the reply once its line ends;
//   - elsewhere the reply's line ends with "…", the retry's lines follow,
//     and the reply goes on on a continuation line that starts with "…"
//     under the reply's first character.
type demoOut struct {
	w     io.Writer
	tty   bool
	color bool

	live      bool   // a live line is drawn (tty only)
	replyOpen bool   // a reply is being printed; the cursor is at its end, mid-line
	replyID   string // the messageId of the last reply printed
	parked    bool   // tty: the reply's line is kept above the live line, its end saved
	cut       bool   // the reply's line was ended by a retry: more of it may follow
	col       int    // the cursor's column in the reply's line, unwrapped
	notes     []demoNote
	err       error
}

// demoNote is a retry met while a reply was parked, printed under the
// reply once its line ends.
type demoNote struct {
	text    string
	resumed bool // the reply went on after it
}

// demoReplyIndent is the width of "rebound: ", where a reply's text starts.
const demoReplyIndent = 9

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

// endReply finishes a reply's line, then prints the retries noted while it
// was parked.
func (o *demoOut) endReply() {
	switch {
	case o.parked:
		// The cursor is on the line below the reply, where the live line was.
		o.clearLive()
		o.parked, o.cut = false, true
	case o.replyOpen:
		o.write("\n")
		o.replyOpen = false
	}
	for _, n := range o.notes {
		line := "  ↻ " + n.text
		if n.resumed {
			line += " · the reply went on where it stopped"
		}
		o.write(o.c(demoYellow, line) + "\n")
	}
	o.notes = nil
}

// line prints a whole line above the live line.
func (o *demoOut) line(format string, args ...any) {
	o.clearLive()
	o.endReply()
	o.write(fmt.Sprintf(format, args...) + "\n")
}

// setLive draws the live line, s in style, in place (terminals only), under
// a parked reply if there is one. It is cut to the terminal's width: a line
// that wrapped could not be redrawn in place.
func (o *demoOut) setLive(style, s string) {
	if !o.tty || o.replyOpen {
		return
	}
	if w := demoTermWidth(o.w); w > 1 {
		if r := []rune(s); len(r) > w-1 {
			s = string(r[:w-2]) + "…"
		}
	}
	o.write("\r\x1b[2K" + o.c(style, s))
	o.live = true
}

// interrupt is called when a retry is scheduled: a reply being printed is
// parked (terminal) or its line is ended with "…" (elsewhere), so that the
// retry's lines can show and the reply can go on afterwards.
func (o *demoOut) interrupt() {
	if !o.replyOpen {
		return
	}
	o.replyOpen = false
	if o.tty {
		// Index down and back up, so that the line below exists and the
		// screen has already scrolled (else the saved place would move),
		// save the cursor at the reply's end, and go down to the live line.
		// A reply that ends at the right margin goes on at the start of
		// the next line, where the terminal would have wrapped it: the
		// index would lose the pending wrap, and the next character would
		// overwrite the last.
		if w := demoTermWidth(o.w); w > 0 && o.col > 0 && o.col%w == 0 {
			o.write("\r\x1bD\x1bD\x1bM\x1b7\x1bD\r")
		} else {
			o.write("\x1bD\x1bM\x1b7\x1bD\r")
		}
		o.parked = true
		return
	}
	o.write(o.c(demoDim, "…") + "\n")
	o.cut = true
}

// note records a retry met while the reply is parked (terminal): it is
// printed under the reply once the reply's line ends. It reports false when
// no reply is parked, and the caller prints the line itself.
func (o *demoOut) note(text string) bool {
	if !o.parked {
		return false
	}
	o.notes = append(o.notes, demoNote{text: text})
	return true
}

// replyText prints reply text as it arrives: on its "rebound:" line, where a
// parked reply stopped, or on a continuation line when the reply's line was
// ended.
func (o *demoOut) replyText(id, s string) {
	switch {
	case id == o.replyID && o.replyOpen:
	case id == o.replyID && o.parked:
		o.clearLive()
		o.write("\x1b8") // back to where the reply stopped
		o.parked, o.replyOpen = false, true
		for i := range o.notes {
			o.notes[i].resumed = true
		}
	case id == o.replyID && o.cut:
		o.clearLive()
		o.endReply() // the notes of a parked reply that was ended
		o.write(strings.Repeat(" ", demoReplyIndent-1) + o.c(demoDim, "…"))
		o.cut, o.replyOpen, o.col = false, true, demoReplyIndent
	default:
		o.clearLive()
		o.endReply()
		o.write(o.c(demoBoldGr, "rebound:") + " ")
		o.replyID, o.replyOpen, o.cut, o.col = id, true, false, demoReplyIndent
	}
	o.write(s)
	for _, r := range s {
		switch r {
		case '\n':
			o.col = 0
		case '\t':
			o.col = (o.col/8 + 1) * 8
		default:
			o.col++
		}
	}
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

package demo

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
)

// isTerminal reports whether w is a terminal, where the live line is
// redrawn in place; tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// ANSI styles.
const (
	bold      = "1"
	dim       = "2"
	red       = "31"
	green     = "32"
	yellow    = "33"
	cyan      = "36"
	boldGreen = "1;32"
	boldCyan  = "1;36"
)

// screen is the terminal the demo prints to. On a terminal one live line
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
type screen struct {
	w     io.Writer
	tty   bool
	color bool

	live      bool   // a live line is drawn (tty only)
	replyOpen bool   // a reply is being printed; the cursor is at its end, mid-line
	replyID   string // the messageId of the last reply printed
	parked    bool   // tty: the reply's line is kept above the live line, its end saved
	cut       bool   // the reply's line was ended by a retry: more of it may follow
	col       int    // the cursor's column in the reply's line, unwrapped
	notes     []retryNote
	err       error
}

// newScreen draws on w: a live line where w is a terminal (not TERM=dumb),
// colours too unless NO_COLOR is set.
func newScreen(w io.Writer, getenv func(string) string) *screen {
	o := &screen{w: w}
	o.tty = isTerminal(w) && getenv("TERM") != "dumb"
	o.color = o.tty && getenv("NO_COLOR") == ""
	return o
}

// retryNote is a retry met while a reply was parked, printed under the
// reply once its line ends.
type retryNote struct {
	text    string
	resumed bool // the reply went on after it
}

// replyIndent is the width of "rebound: ", where a reply's text starts.
const replyIndent = 9

func (o *screen) write(s string) {
	if o.err == nil {
		_, o.err = io.WriteString(o.w, s)
	}
}

// c styles s when colour is on.
func (o *screen) c(style, s string) string {
	if !o.color || s == "" {
		return s
	}
	return "\x1b[" + style + "m" + s + "\x1b[0m"
}

func (o *screen) clearLive() {
	if o.live {
		o.write("\r\x1b[2K")
		o.live = false
	}
}

// endReply finishes a reply's line, then prints the retries noted while it
// was parked.
func (o *screen) endReply() {
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
		o.write(o.c(yellow, line) + "\n")
	}
	o.notes = nil
}

// line prints a whole line above the live line.
func (o *screen) line(format string, args ...any) {
	o.clearLive()
	o.endReply()
	o.write(fmt.Sprintf(format, args...) + "\n")
}

// setLive draws the live line, s in style, in place (terminals only), under
// a parked reply if there is one. It is cut to the terminal's width: a line
// that wrapped could not be redrawn in place.
func (o *screen) setLive(style, s string) {
	if !o.tty || o.replyOpen {
		return
	}
	if w := termWidth(o.w); w > 1 {
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
func (o *screen) interrupt() {
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
		if w := termWidth(o.w); w > 0 && o.col > 0 && o.col%w == 0 {
			o.write("\r\x1bD\x1bD\x1bM\x1b7\x1bD\r")
		} else {
			o.write("\x1bD\x1bM\x1b7\x1bD\r")
		}
		o.parked = true
		return
	}
	o.write(o.c(dim, "…") + "\n")
	o.cut = true
}

// note records a retry met while the reply is parked (terminal): it is
// printed under the reply once the reply's line ends. It reports false when
// no reply is parked, and the caller prints the line itself.
func (o *screen) note(text string) bool {
	if !o.parked {
		return false
	}
	o.notes = append(o.notes, retryNote{text: text})
	return true
}

// replyText prints reply text as it arrives: on its "rebound:" line, where a
// parked reply stopped, or on a continuation line when the reply's line was
// ended.
func (o *screen) replyText(id, s string) {
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
		o.write(strings.Repeat(" ", replyIndent-1) + o.c(dim, "…"))
		o.cut, o.replyOpen, o.col = false, true, replyIndent
	default:
		o.clearLive()
		o.endReply()
		o.write(o.c(boldGreen, "rebound:") + " ")
		o.replyID, o.replyOpen, o.cut, o.col = id, true, false, replyIndent
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

// ticker redraws the live line on a terminal; elsewhere it never ticks.
func (o *screen) ticker() (tick <-chan time.Time, stop func()) {
	if !o.tty {
		return nil, func() {}
	}
	t := time.NewTicker(100 * time.Millisecond)
	return t.C, t.Stop
}

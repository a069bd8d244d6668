package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// Summary is what a list of sessions shows of one session. It is derived
// from the session's log; the index (Index) keeps a copy of each so a list
// need not read the logs.
type Summary struct {
	SessionID string `json:"sessionId"`
	// Cwd is the working directory the session was created in (its
	// session/start).
	Cwd string `json:"cwd"`
	// Title is the last title recorded (on a turn/end); a log without one
	// gets a title made from its first prompt.
	Title string `json:"title,omitempty"`
	// UpdatedAt is the time of the last event written.
	UpdatedAt time.Time `json:"updatedAt"`
	// AdditionalDirectories are those of its session/start.
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
}

// Equal reports whether s and o are the same summary.
func (s Summary) Equal(o Summary) bool {
	return s.SessionID == o.SessionID && s.Cwd == o.Cwd && s.Title == o.Title &&
		s.UpdatedAt.Equal(o.UpdatedAt) && slices.Equal(s.AdditionalDirectories, o.AdditionalDirectories)
}

// Summarize derives the summary of a log from its events. titled reports
// whether the title was recorded (on a turn/end) rather than made from the
// first prompt.
func Summarize(events []Event) (s Summary, titled bool) {
	var f summaryFold
	for _, ev := range events {
		f.add(ev.Time, ev.Type, ev.Data)
	}
	return f.summary(), f.titled
}

// summaryFold accumulates a Summary event by event, decoding only the
// events that contribute to it.
type summaryFold struct {
	s       Summary
	titled  bool
	derived string // from the first turn/start, for a log without a recorded title
	turns   bool
}

func (f *summaryFold) add(t time.Time, typ string, data json.RawMessage) {
	if t.After(f.s.UpdatedAt) {
		f.s.UpdatedAt = t
	}
	switch typ {
	case TypeSessionStart:
		var d SessionStart
		if json.Unmarshal(data, &d) == nil {
			f.s.SessionID, f.s.Cwd, f.s.AdditionalDirectories = d.SessionID, d.Cwd, d.AdditionalDirectories
		}
	case TypeTurnEnd:
		var d TurnEnd
		if json.Unmarshal(data, &d) == nil && d.Title != "" {
			f.s.Title, f.titled = d.Title, true
		}
	case TypeTurnStart:
		if f.turns {
			return
		}
		f.turns = true
		var d TurnStart
		if json.Unmarshal(data, &d) == nil {
			f.derived = ShortTitle(d.Text)
		}
		if f.derived == "" {
			// A prompt of images or blanks: a session with a turn always
			// has a title, which is how a list tells it from one without.
			f.derived = UntitledSession
		}
	}
}

func (f *summaryFold) summary() Summary {
	s := f.s
	if !f.titled {
		s.Title = f.derived
	}
	return s
}

// ReadSummary reads the summary of the log at path without checking it:
// a log that Load would refuse (a broken line, a torn tail) still has a
// summary, from the lines that can be read, so it can be listed (and
// deleted). It fails only when the file can't be read or does not begin
// with a session/start. The session id is the one the file is named after.
// Only a regular file is read, never through a link: a FIFO named like a
// log is refused at once instead of blocking the list.
func ReadSummary(path string) (Summary, error) {
	f, err := regfile.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return Summary{}, openError(err)
	}
	defer f.Close()
	var fold summaryFold
	started := false
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line (a big tool result): read it whole, up to a
			// bound. ReadSlice's line is only valid until the next read.
			line, err = readLongLine(br, bytes.Clone(line), maxSummaryLine)
		}
		if err != nil && err != io.EOF {
			return Summary{}, fmt.Errorf("read %s: %w", path, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var ev struct {
				Time time.Time       `json:"time"`
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			jerr := json.Unmarshal(line, &ev)
			if !started && (jerr != nil || ev.Type != TypeSessionStart) {
				return Summary{}, fmt.Errorf("%s: not a session log: it does not begin with %s", path, TypeSessionStart)
			}
			if jerr == nil { // a broken line, or a torn last one, is skipped
				started = true
				fold.add(ev.Time, ev.Type, ev.Data)
			}
		}
		if err == io.EOF {
			break
		}
	}
	if !started {
		return Summary{}, fmt.Errorf("%s: not a session log: it is empty", path)
	}
	s := fold.summary()
	s.SessionID = strings.TrimSuffix(filepath.Base(path), ".jsonl")
	return s, nil
}

// maxSummaryLine bounds one log line ReadSummary reads: above any record
// Rebound writes (a reply is capped at 16 MiB, and JSON escaping can
// double it). A longer line is skipped unread, so a file that is not a log
// costs no memory however it is made.
const maxSummaryLine = 64 << 20

// readLongLine reads the rest of a line whose first part is head. A line
// over limit bytes is read to its end and dropped: it comes back nil.
func readLongLine(br *bufio.Reader, head []byte, limit int) ([]byte, error) {
	line := head
	for {
		part, err := br.ReadSlice('\n')
		if line != nil {
			if len(line)+len(part) > limit {
				line = nil // dropped; the rest is read and discarded
			} else {
				line = append(line, part...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// UntitledSession is the title of a session whose first prompt has no
// words to make one from.
const UntitledSession = "Untitled session"

// MaxTitleRunes is the length ShortTitle cuts a title to.
const MaxTitleRunes = 60

// ShortTitle makes a title from the text of a prompt: its first non-blank
// line, printable (printable), spaces collapsed, cut at a word boundary to at most MaxTitleRunes
// characters with "…" when it was longer. It is "" when text is blank.
func ShortTitle(text string) string {
	var line string
	for l := range strings.SplitSeq(printable(text), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			line = l
			break
		}
	}
	if utf8.RuneCountInString(line) <= MaxTitleRunes {
		return line
	}
	// Room for the ellipsis.
	cut, n := 0, 0
	for i := range line {
		if n == MaxTitleRunes-1 {
			cut = i
			break
		}
		n++
	}
	head := line[:cut]
	// Cut at the last space when it keeps at least half the room, so a
	// word is not cut in two; a long word is cut where it must be.
	next, _ := utf8.DecodeRuneInString(line[cut:])
	inWord := unicode.IsLetter(next) || unicode.IsDigit(next)
	if sp := strings.LastIndexByte(head, ' '); sp >= len(head)/2 && inWord {
		head = head[:sp]
	}
	head = strings.TrimRightFunc(head, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;:-–—([{", r) })
	return head + "…"
}

// printable is text without a terminal's escape sequences (a line pasted
// from a terminal carries its colours) and with every other control or
// format character but a newline made a space: a title goes to the
// editor and to a terminal.
func printable(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == 0x1b:
			n = escapeLen(text[i:])
		case r == '\n':
			b.WriteByte('\n')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			b.WriteByte(' ')
		default:
			b.WriteString(text[i : i+n])
		}
		i += n
	}
	return b.String()
}

// escapeLen is the length of the escape sequence s begins with (s[0] is
// ESC): a CSI (ESC [ … final byte), a string (OSC, DCS, APC, PM, SOS, up
// to BEL or ESC \), or ESC and one character. An unfinished one runs to
// the end of s.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if c := s[i]; c >= 0x40 && c <= 0x7e {
				return i + 1
			} else if c < 0x20 || c > 0x7e {
				return i // not a CSI byte: the sequence ends before it
			}
		}
		return len(s)
	case ']', 'P', '_', '^', 'X':
		for i := 2; i < len(s); i++ {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			}
		}
		return len(s)
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	return 1 + n
}

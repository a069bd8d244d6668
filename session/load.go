package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// Loaded is a log as read back.
type Loaded struct {
	Events []Event
	// Data holds, for each of Events, its data as read (a *TurnStart, a
	// *StepEnd, …), for History.Add: deriving the conversation then
	// decodes nothing again. Drop it once used.
	Data     []any
	Warnings []string // things repaired or left open, each naming its line
	// TornBytes is the size of an unterminated, unparsable last line (a write
	// cut short by a crash) that was dropped; ValidSize is the size of
	// everything kept, the length Open truncates the file to.
	TornBytes int64
	ValidSize int64
	// Unterminated is set when the last line is a complete event without its
	// trailing newline; Open appends the newline.
	Unterminated bool
	// HeldBack is set when a read without the lock left an unterminated
	// last line alone: its writer may still be writing it.
	HeldBack bool
	// OpenTurn is the number of a last turn that has no turn/end (the process
	// died during it), or 0. OpenStep is its open step, or 0, and
	// PendingToolCalls its tool calls without a result: whoever closes the
	// turn writes what is needed to settle them.
	OpenTurn         int
	OpenStep         int
	LastStep         int // the open turn's last started step
	PendingToolCalls []string
	// Tail is set by Log.Lock and Log.Refresh when Events are only the
	// events appended since the Log last read or wrote the file; otherwise
	// they are all of the log's (read for the first time, or again because
	// the file changed otherwise than by appends).
	Tail bool
}

// Load reads and checks the log at path. It does not modify the file. Only
// a regular file is read (a link to one is followed): a FIFO or a device is
// refused at once.
func Load(path string) (*Loaded, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, openError(err)
	}
	defer f.Close()
	return Parse(f, path)
}

func openError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// Parse reads and checks a log; name is used in errors and warnings.
func Parse(r io.Reader, name string) (*Loaded, error) {
	ld, _, err := parse(r, name, false)
	return ld, err
}

// rawEvent has pointers so a missing field can be told from a zero one.
type rawEvent struct {
	Seq  *int64          `json:"seq"`
	V    *int            `json:"v"`
	Time *time.Time      `json:"time"`
	Type *string         `json:"type"`
	Data json.RawMessage `json:"data"`
}

// parse reads and checks a log. With join, runs of chunks become one event
// each (see chunkRun): Open keeps the events in memory for as long as the
// session is open, so it joins; Load and Parse return every line.
func parse(r io.Reader, name string, join bool) (*Loaded, *checker, error) {
	c := newChecker(name)
	ld := &Loaded{}
	if _, err := scan(r, name, c, 1, join, true, ld); err != nil {
		return nil, nil, err
	}
	if err := finish(ld, c, name, true); err != nil {
		return nil, nil, err
	}
	return ld, c, nil
}

// scan reads the lines of r, line firstLine of the log on, checks each with
// c (which has seen the lines before) and adds them to ld, counting their
// bytes in ld.ValidSize; it returns how many lines it took. settled says no
// writer can be appending (the log's lock is held, or nobody cares): an
// unterminated last line is then a write cut short, or a complete one
// missing its newline. Otherwise it may be a write still under way, and is
// left for a later read.
func scan(r io.Reader, name string, c *checker, firstLine int, join, settled bool, ld *Loaded) (int, error) {
	var run chunkRun
	next, shared, err := lineReader(r)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	lines := 0
	for lineNo := firstLine; ; lineNo++ {
		line, err := next()
		if err != nil && err != io.EOF {
			return 0, fmt.Errorf("read %s: %w", name, err)
		}
		if len(line) == 0 {
			break // clean end: the last line had its newline
		}
		terminated := line[len(line)-1] == '\n'
		body := bytes.TrimSuffix(line, []byte("\n"))
		if !terminated && !ld.takesLast(body, settled, name, lineNo) {
			break
		}
		ev, data, err := readLine(body, c, name, lineNo)
		if err != nil {
			return 0, err
		}
		ld.add(&run, ev, data, join, shared)
		ld.ValidSize += int64(len(line))
		lines++
		if !terminated {
			ld.Unterminated = true
			ld.Warnings = append(ld.Warnings, fmt.Sprintf("%s:%d: last line is complete but has no newline", name, lineNo))
			break
		}
	}
	run.end(ld.Events)
	return lines, nil
}

// takesLast reports whether scan takes body, a last line without its
// newline: not while a writer may still be appending it (it is held
// back), nor when it is not JSON (a torn write, dropped with a warning).
func (ld *Loaded) takesLast(body []byte, settled bool, name string, lineNo int) bool {
	if !settled {
		ld.HeldBack = true
		return false
	}
	if !json.Valid(body) {
		// Records are written whole with one Write each, so an
		// unterminated line that is not JSON is a write cut short.
		ld.TornBytes = int64(len(body))
		ld.Warnings = append(ld.Warnings, fmt.Sprintf("%s:%d: dropped a torn last line (%d bytes, no newline): the write was cut short", name, lineNo, len(body)))
		return false
	}
	return true
}

// readLine parses the log line body and checks it with c, which has seen
// the lines before. Every event's data is decoded once, for the checker
// and, in Loaded.Data, for whoever derives from the log (History.Add
// checks it again without decoding it again); a chunk's also for the join.
func readLine(body []byte, c *checker, name string, lineNo int) (Event, any, error) {
	ev, ok := parseRecord(body)
	if !ok {
		var perr *lineError
		if ev, perr = parseLine(body); perr != nil {
			return Event{}, nil, &InvariantError{Path: name, Line: lineNo, Seq: perr.seq, Msg: perr.msg}
		}
	}
	data := eventData(ev)
	c.typed = data
	err := c.check(ev)
	c.typed = nil
	return ev, data, err
}

// add adds event ev, with its decoded data, to ld: joined to the chunks
// of run when join says and it goes on with them, else as an event of its
// own. shared says ev.Data shares the read's buffer.
func (ld *Loaded) add(run *chunkRun, ev Event, data any, join, shared bool) {
	chunk, _ := data.(*AssistantChunk)
	if join && run.join(ld.Events, ev, chunk) {
		return
	}
	run.end(ld.Events)
	if shared {
		// Keep what this event needs of the line, not the whole read.
		ev.Data = bytes.Clone(ev.Data)
	}
	ld.Events = append(ld.Events, ev)
	ld.Data = append(ld.Data, data)
	run.start(ld.Events, chunk)
}

// wholeReadLimit is the largest log (or tail of one) lineReader reads with
// one read. An event keeps a copy of its data, not the buffer: the lines of
// a run of joined chunks are dropped.
const wholeReadLimit = 64 << 20

// lineReader returns the lines of r one by one, each with its newline but
// the last if it has none; io.EOF after the last. A section of a log up to
// wholeReadLimit is read at once and its lines are slices of that one
// buffer (shared): bufio copies a line longer than its buffer twice, and a
// committed reply is one line.
func lineReader(r io.Reader) (next func() ([]byte, error), shared bool, err error) {
	if sr, ok := r.(*io.SectionReader); ok && sr.Size() <= wholeReadLimit {
		buf := make([]byte, sr.Size())
		n, err := io.ReadFull(sr, buf)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, false, err
		}
		buf = buf[:n:n]
		return func() ([]byte, error) {
			i := bytes.IndexByte(buf, '\n') + 1
			if i == 0 {
				i = len(buf)
			}
			line := buf[:i:i]
			buf = buf[i:]
			if len(buf) == 0 {
				return line, io.EOF
			}
			return line, nil
		}, true, nil
	}
	br := bufio.NewReaderSize(r, 64<<10)
	return func() ([]byte, error) { return br.ReadBytes('\n') }, false, nil
}

// finish fills in what c says of the log's end: an empty log is refused,
// and an open turn is reported (warned about when settled: else its writer
// may be running it).
func finish(ld *Loaded, c *checker, name string, settled bool) error {
	if c.lastSeq == 0 {
		if ld.HeldBack {
			return errHeldBack
		}
		return &InvariantError{Path: name, Line: 1, Msg: "no events: a log must begin with " + TypeSessionStart}
	}
	if t := c.open; t != nil {
		ld.OpenTurn, ld.OpenStep, ld.LastStep = t.n, t.step, t.lastStep
		ld.PendingToolCalls = append([]string(nil), t.callIDs...)
		if settled {
			ld.Warnings = append(ld.Warnings, fmt.Sprintf("%s:%d: turn %d has no turn/end: the last turn was left open", name, t.line, t.n))
		}
	}
	return nil
}

// errHeldBack is finish's answer to a read without the lock that found no
// event but an unterminated line, which only a read under the lock can
// settle (OpenShared takes it).
var errHeldBack = errors.New("the only line may still be being written")

type lineError struct {
	seq int64
	msg string
}

// parseLine decodes one line into an Event, insisting on every field.
func parseLine(b []byte) (Event, *lineError) {
	var raw rawEvent
	if err := json.Unmarshal(b, &raw); err != nil {
		return Event{}, &lineError{msg: "not a JSON event: " + err.Error()}
	}
	var seq int64
	if raw.Seq != nil {
		seq = *raw.Seq
	}
	missing := func(field string) (Event, *lineError) {
		return Event{}, &lineError{seq: seq, msg: fmt.Sprintf("event has no %q", field)}
	}
	switch {
	case raw.Seq == nil:
		return missing("seq")
	case raw.V == nil:
		return missing("v")
	case raw.Time == nil:
		return missing("time")
	case raw.Type == nil:
		return missing("type")
	case len(raw.Data) == 0:
		return missing("data")
	}
	return Event{Seq: seq, V: *raw.V, Time: *raw.Time, Type: *raw.Type, Data: raw.Data}, nil
}

// parseRecord reads a line of exactly the form appendRecord writes,
// {"seq":N,"v":N,"time":"…","type":"…","data":{…}}, without going over its
// data: encoding/json went over the whole line twice, and the data is
// decoded (so checked) anyway, once, by the checker's rule for its type,
// which refuses data that is no JSON object. ok is false for any other
// form, which parseLine reads; on every line this one takes whose data is
// JSON, the two agree (FuzzParseRecord). Data aliases b.
func parseRecord(b []byte) (ev Event, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"seq":`))
	if !ok {
		return Event{}, false
	}
	var v int64
	if ev.Seq, rest, ok = cutInt(rest, `,"v":`); !ok {
		return Event{}, false
	}
	if v, rest, ok = cutInt(rest, `,"time":`); !ok || v != int64(int(v)) {
		return Event{}, false
	}
	ev.V = int(v)
	// The time, with its quotes, as encoding/json reads a time.Time.
	end := bytes.IndexByte(rest[min(1, len(rest)):], '"') + 1
	if len(rest) == 0 || rest[0] != '"' || end < 1 || bytes.IndexByte(rest[:end], '\\') >= 0 || ev.Time.UnmarshalJSON(rest[:end+1]) != nil {
		return Event{}, false
	}
	if rest, ok = bytes.CutPrefix(rest[end+1:], []byte(`,"type":"`)); !ok {
		return Event{}, false
	}
	end = bytes.IndexByte(rest, '"')
	if end < 0 || !plainJSONString(string(rest[:end])) {
		return Event{}, false
	}
	ev.Type = eventType(rest[:end])
	if rest, ok = bytes.CutPrefix(rest[end+1:], []byte(`,"data":`)); !ok {
		return Event{}, false
	}
	if n := len(rest); n < 3 || rest[0] != '{' || rest[n-2] != '}' || rest[n-1] != '}' {
		return Event{}, false
	}
	ev.Data = rest[: len(rest)-1 : len(rest)-1]
	return ev, true
}

// cutInt reads a JSON integer (no leading zeros, no fraction or exponent)
// followed by sep. The digits are summed here: strconv would need them as
// a string, one allocation per record.
func cutInt(b []byte, sep string) (int64, []byte, bool) {
	neg := len(b) > 0 && b[0] == '-'
	start := 0
	if neg {
		start = 1
	}
	i := start
	var n uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + uint64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 1 && b[start] == '0' || !bytes.HasPrefix(b[i:], []byte(sep)) {
		return 0, nil, false
	}
	if digits > 18 { // may not fit: let strconv say
		v, err := strconv.ParseInt(string(b[:i]), 10, 64)
		return v, b[i+len(sep):], err == nil
	}
	v := int64(n)
	if neg {
		v = -v
	}
	return v, b[i+len(sep):], true
}

// eventType is t as a string, without an allocation for the types the
// checker has a rule for (the types Rebound writes).
func eventType(t []byte) string {
	if name, ok := typeNames[string(t)]; ok {
		return name
	}
	return string(t)
}

// typeNames holds each type with a rule as its own key, interned.
var typeNames = func() map[string]string {
	m := make(map[string]string, len(rules))
	for name := range rules {
		m[name] = name
	}
	return m
}()

// chunkRun joins consecutive assistant/chunk events of one step, message
// and kind (text, reasoning, or both in held mode) into the first of them.
// Everything that reads chunks (UnfinishedReply, the checker, inspect)
// reads their text in order and their step, which joining keeps.
type chunkRun struct {
	at              int // index of the run's event, when ok
	d               AssistantChunk
	text, reasoning strings.Builder
	joined, ok      bool
}

// start opens a run at the last event if it is a chunk; chunk is its
// decoded data (nil for any other event).
func (r *chunkRun) start(events []Event, chunk *AssistantChunk) {
	r.ok, r.d = false, AssistantChunk{}
	if chunk == nil {
		return
	}
	r.d = *chunk
	r.at, r.ok, r.joined = len(events)-1, true, false
}

// join adds ev, a chunk whose data is chunk, to the open run if it belongs
// to it.
func (r *chunkRun) join(events []Event, ev Event, chunk *AssistantChunk) bool {
	if !r.ok || chunk == nil {
		return false
	}
	d := *chunk
	if d.Turn != r.d.Turn || d.Step != r.d.Step || d.Shown != r.d.Shown ||
		d.MessageID != r.d.MessageID || (d.Text != "") != (r.d.Text != "") || (d.Reasoning != "") != (r.d.Reasoning != "") {
		return false
	}
	if !r.joined {
		r.joined = true
		r.text.Reset()
		r.reasoning.Reset()
		r.text.WriteString(r.d.Text)
		r.reasoning.WriteString(r.d.Reasoning)
	}
	r.text.WriteString(d.Text)
	r.reasoning.WriteString(d.Reasoning)
	e := &events[r.at]
	e.Through, e.Time = ev.Seq, ev.Time
	return true
}

// end writes the joined data into the run's event.
func (r *chunkRun) end(events []Event) {
	if r.ok && r.joined {
		r.d.Text, r.d.Reasoning = r.text.String(), r.reasoning.String()
		events[r.at].Data, _ = json.Marshal(r.d) // plain strings and numbers
		r.text, r.reasoning = strings.Builder{}, strings.Builder{}
	}
	r.ok, r.joined = false, false
}

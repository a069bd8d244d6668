package llm

import (
	"bytes"
	"io"
	"regexp"
)

// Stage 1 of a stream, SSE events (see stream): the response body as SSE
// lines, beneath go-openai's reader.
//
// From go-openai it takes the line reader itself: go-openai splits the
// body into lines, strips "data:", ends at [DONE] and folds a
// `data: {"error":` line into an error (stream_reader.go, pinned by
// TestGoOpenAI_StreamReaderIsTheOneTheTapWasCheckedAgainst). The tap sits
// between the body and that reader and makes it safe and complete: it
// filters what go-openai would keep without bound, bounds what is received
// without progress, and keeps what go-openai drops (sseWatch). The events
// reader (events.go) is the other half of the stage: it takes the payloads
// from go-openai and puts back what go-openai swallowed.

// goOpenAIErrorPrefix is go-openai's own errorPrefix (stream_reader.go). Lines
// it matches never reach RecvRaw: go-openai swallows them into an error whose
// parsing is fragile (no "message" field, numeric codes). The tap keeps those
// payloads verbatim instead.
var goOpenAIErrorPrefix = regexp.MustCompile(`^data:\s*{"error":`)

// tapReadSize is the tap's own read buffer, allocated once per attempt.
const tapReadSize = 16 << 10

// lineState is where the tap is within the current line.
type lineState uint8

const (
	lineStart  lineState = iota // skipping leading blanks
	linePrefix                  // collecting the first bytes: is it "data:"?
	lineData                    // a data line, passed on to go-openai
	lineOther                   // any other line, dropped
)

// sseTap sits between the response body and go-openai's parser and does
// three things with each SSE line.
//
// It filters: only data lines reach go-openai; every other line (a comment,
// a keep-alive, event:/id:/retry:, a blank separator, non-SSE text) is
// dropped, and a run of them is replaced by one bare newline. go-openai
// keeps every non-data line in an error buffer it never empties, so without
// the filter a flood of keep-alives would grow without limit; the bare line
// costs nothing there and keeps what go-openai relies on (the line after an
// error event ends that event).
//
// It bounds (budget): the bytes of dropped lines and of empty data lines
// count as received without progress (the stream adds data events that
// carried no delta, and resets the count on a delta); past limits.idle the
// tap fails the read. One data line longer than limits.event fails it too,
// since go-openai holds a whole line in memory before returning it.
//
// It watches (watch): it records what go-openai drops or reduces to an
// error. It runs ahead of go-openai's parser (bufio reads in blocks, and
// ahead filters what was read but not yet asked for), so what it records
// is consulted only when go-openai reports an error or an empty event, or
// at the end of the body: by then the relevant line has been read.
//
// Read and the stream's accounting run on the goroutine that calls Recv;
// Close may come from any goroutine and touches only rc.
type sseTap struct {
	rc     io.ReadCloser
	in     tapInput
	line   sseLine
	out    []byte // bytes owed to go-openai before any more input
	outBuf [len("data:")]byte
	gap    bool // a bare newline stands for the dropped lines since the last data line
	watch  sseWatch
	budget tapBudget
	stage  tapInput // input ahead filtered, not yet handed to go-openai
}

// tapInput is a buffer and the part of it not yet used, buf[pos:end].
type tapInput struct {
	buf      []byte
	pos, end int
	err      error // the reader's error, returned once buf[pos:end] is used up
}

func (in *tapInput) rest() []byte { return in.buf[in.pos:in.end] }

// sseLine is the line being filtered.
type sseLine struct {
	state  lineState
	prefix [len("data:")]byte
	npre   int
	n      int64  // bytes of the line after its leading blanks
	text   []byte // the line for the watch, capped at maxCapture
	over   bool   // text reached maxCapture; the rest is not recorded
}

// record keeps up to maxCapture bytes of the line for the watch.
func (l *sseLine) record(b []byte) {
	if l.over {
		return
	}
	if room := maxCapture - len(l.text); len(b) > room {
		b, l.over = b[:room], true
	}
	l.text = append(l.text, b...)
}

func newTap(rc io.ReadCloser, lim limits) *sseTap {
	return &sseTap{rc: rc, budget: tapBudget{lim: lim.withDefaults()}, in: tapInput{buf: make([]byte, tapReadSize)}}
}

func (t *sseTap) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if st := &t.stage; st.pos < st.end {
		n := copy(p, st.rest())
		st.pos += n
		return n, nil
	}
	for {
		n := t.filter(p)
		if n > 0 {
			return n, nil
		}
		if t.budget.limited != nil {
			return 0, t.budget.limited
		}
		if t.in.pos < t.in.end {
			continue
		}
		if t.in.err != nil {
			if t.line.state != lineStart {
				t.endLine() // the last line had no newline (a bare JSON body)
			}
			return 0, t.in.err
		}
		m, err := t.rc.Read(t.in.buf)
		t.in.pos, t.in.end, t.in.err = 0, m, err
	}
}

func (t *sseTap) Close() error { return t.rc.Close() }

// ahead filters the input already read, without reading more, so that the
// events in it are counted. go-openai reads the staged bytes before any
// more input; the limits see the lines as they are filtered, up to
// tapReadSize earlier than they would have been.
func (t *sseTap) ahead() {
	if t.in.pos >= t.in.end && len(t.out) == 0 {
		return
	}
	st := &t.stage
	if st.buf == nil {
		st.buf = make([]byte, tapReadSize)
	}
	n := copy(st.buf, st.rest())
	st.pos, st.end = 0, n+t.filter(st.buf[n:])
}

// filter moves filtered input into p and returns how much it wrote. It stops
// when p is full, the input is used up, or a limit is hit.
func (t *sseTap) filter(p []byte) int {
	n := 0
	for n < len(p) && t.budget.limited == nil {
		if len(t.out) > 0 {
			c := copy(p[n:], t.out)
			t.out, n = t.out[c:], n+c
			continue
		}
		if t.in.pos >= t.in.end {
			break
		}
		switch t.line.state {
		case lineStart:
			t.skipBlanks()
		case linePrefix:
			t.readPrefix()
		case lineData:
			n += t.passData(p[n:])
		case lineOther:
			t.dropOther()
		}
	}
	return n
}

// skipBlanks drops the blanks that start a line.
func (t *sseTap) skipBlanks() {
	b := t.in.rest()
	i := 0
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	t.in.pos += i
	if t.budget.noProgress(int64(i)) != nil || i == len(b) {
		return
	}
	t.line.state = linePrefix
}

// readPrefix collects the line's first bytes and decides whether it is a
// data line, to pass on, or another, to drop.
func (t *sseTap) readPrefix() {
	in, l := &t.in, &t.line
	for in.pos < in.end && l.npre < len(l.prefix) && in.buf[in.pos] != '\n' {
		l.prefix[l.npre] = in.buf[in.pos]
		l.npre++
		in.pos++
	}
	full := l.npre == len(l.prefix)
	if !full && in.pos == in.end {
		return // wait for more input
	}
	pre := l.prefix[:l.npre]
	l.npre = 0
	l.record(pre)
	l.n = int64(len(pre))
	if full && string(pre) == "data:" {
		l.state, t.gap = lineData, false
		t.out = append(t.outBuf[:0], pre...)
	} else {
		l.state = lineOther
		t.budget.noProgress(int64(len(pre)))
	}
}

// passData copies the data line's next bytes into p and returns how many.
func (t *sseTap) passData(p []byte) int {
	seg := t.in.rest()
	if i := bytes.IndexByte(seg, '\n'); i >= 0 {
		seg = seg[:i+1]
	}
	c := copy(p, seg)
	seg = seg[:c]
	t.in.pos += c
	eol := seg[len(seg)-1] == '\n'
	if eol {
		seg = seg[:len(seg)-1]
	}
	t.line.record(seg)
	t.line.n += int64(len(seg))
	if t.budget.eventTooLong(t.line.n) {
		return c
	}
	if eol {
		t.endLine()
	}
	return c
}

// dropOther drops the next bytes of a line that is not data; at its end a
// run of such lines becomes one bare newline.
func (t *sseTap) dropOther() {
	seg := t.in.rest()
	i := bytes.IndexByte(seg, '\n')
	if i >= 0 {
		seg = seg[:i]
	}
	t.line.record(seg)
	t.in.pos += len(seg)
	t.line.n += int64(len(seg))
	if t.budget.noProgress(int64(len(seg))) != nil || i < 0 {
		return
	}
	t.in.pos++
	t.budget.noProgress(1)
	t.endLine()
	if !t.gap {
		t.out, t.gap = append(t.outBuf[:0], '\n'), true
	}
}

// isBlank reports the ASCII white space go-openai trims before "data:".
func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// endLine hands the finished line to the watch and starts the next.
func (t *sseTap) endLine() {
	l := &t.line
	state := l.state
	if state == linePrefix { // a line shorter than "data:"
		l.record(l.prefix[:l.npre])
		t.budget.noProgress(int64(l.npre))
		l.npre = 0
		state = lineOther
	}
	line := bytes.TrimSpace(l.text)
	n := l.n
	l.text, l.over, l.n, l.state = l.text[:0], false, 0, lineStart
	if state != lineData {
		t.watch.other(line)
	} else if t.watch.data(line) {
		t.budget.noProgress(n + 1) // go-openai returns it as an empty event
	}
}

// sseWatch is what the lines said that go-openai drops or reduces to an
// error: the place to recognise another framing of the same facts (an
// error sent as an event: line or a comment, say).
type sseWatch struct {
	intercept [][]byte // error events go-openai swallows, verbatim, oldest first
	junk      []byte   // non-SSE lines (a JSON error body sent with 200)
	sawDone   bool     // data: [DONE]
	// errEvent: the event being read was named "error" (an event: line
	// since the last blank line); errAt are the numbers (see events) of the
	// data events sent under that name, oldest first: their payload is the
	// provider's error whatever its shape.
	errEvent bool
	errAt    []int64
	// status is an HTTP status a comment line gave (":HTTP_STATUS/429",
	// a gateway's word for the upstream's answer), 0 if none: the status
	// of an error that follows it, or of a stream that ends after it.
	status int
	// events counts the data lines go-openai returns as events (not empty,
	// not [DONE], not an error) that the filter has finished: handed to
	// go-openai, or staged. The events reader compares it with the events
	// it took to tell whether the next one is there without waiting.
	events int64
}

// data takes a whole data line (trimmed) and reports whether go-openai
// returns it as an empty event.
func (w *sseWatch) data(line []byte) (empty bool) {
	payload := bytes.TrimSpace(line[len("data:"):])
	switch {
	case len(payload) == 0:
		return true
	case string(payload) == "[DONE]":
		w.sawDone = true
	case goOpenAIErrorPrefix.Match(line):
		if len(w.intercept) < 16 {
			w.intercept = append(w.intercept, bytes.Clone(payload))
		}
	default:
		w.events++
		if w.errEvent && len(w.errAt) < 16 {
			w.errAt = append(w.errAt, w.events)
		}
	}
	return false
}

// other takes a whole line (trimmed) that is not data.
func (w *sseWatch) other(line []byte) {
	switch {
	case len(line) == 0:
		w.errEvent = false // a blank line ends the event
	case line[0] == ':':
		// SSE comment (keep-alive), or a gateway's status
		if st, ok := commentStatus(line); ok {
			w.status = st
		}
	case bytes.HasPrefix(line, []byte("event:")):
		w.errEvent = bytes.EqualFold(bytes.TrimSpace(line[len("event:"):]), []byte("error"))
	case bytes.HasPrefix(line, []byte("id:")), bytes.HasPrefix(line, []byte("retry:")):
	default:
		if room := maxCapture - len(w.junk); room > 0 {
			w.junk = append(w.junk, line[:min(len(line), room)]...)
		}
	}
}

// popIntercepted returns the oldest payload go-openai swallowed, if any.
func (w *sseWatch) popIntercepted() ([]byte, bool) {
	if len(w.intercept) == 0 {
		return nil, false
	}
	p := w.intercept[0]
	w.intercept = w.intercept[1:]
	return p, true
}

// commentStatusRE is an upstream status a gateway writes as an SSE comment
// (": HTTP_STATUS/429") before it sends the error, or instead of one.
var commentStatusRE = regexp.MustCompile(`(?i)^:\s*HTTP[_ ]?STATUS\s*[/:= ]\s*([1-5][0-9][0-9])\b`)

// commentStatus reads the status of a comment line, if it gives one from
// 400 to 599.
func commentStatus(line []byte) (int, bool) {
	m := commentStatusRE.FindSubmatch(line)
	if m == nil {
		return 0, false
	}
	n := int(m[1][0]-'0')*100 + int(m[1][1]-'0')*10 + int(m[1][2]-'0')
	return n, n >= 400 && n <= 599
}

// isErrorEvent reports whether data event number n (counted as events
// does) was sent under the event name "error", forgetting those before it.
func (w *sseWatch) isErrorEvent(n int64) bool {
	for len(w.errAt) > 0 && w.errAt[0] < n {
		w.errAt = w.errAt[1:]
	}
	return len(w.errAt) > 0 && w.errAt[0] == n
}

package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// HTTPDoer is the one method the adapter needs from an HTTP client. It is
// go-openai's HTTPDoer, so *http.Client and the in-memory mock both fit.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// maxCapture bounds what is kept of an error body, an in-stream error event
// or non-SSE text in a 2xx body: enough for any provider's error JSON, small
// enough that a misbehaving proxy cannot make us hold megabytes of HTML.
const maxCapture = 64 << 10

// captureKey carries the per-attempt *capture from Stream to captureDoer
// through the request context, so one go-openai client serves all attempts.
type captureKey struct{}

// capture is what the HTTP layer saw for one attempt. go-openai drops the
// status, the headers and the raw body of failures; we keep them here.
type capture struct {
	status int
	header http.Header
	body   []byte  // error body (non-2xx), capped
	tap    *sseTap // 2xx body
	resp   *http.Response
	limits limits // for the tap
	prefix bool   // mark the last message "prefix": true (markPrefix)
}

func (c *capture) requestID() string {
	if c.header == nil {
		return ""
	}
	for _, k := range []string{"X-Request-Id", "Request-Id", "X-Amzn-Requestid"} {
		if v := c.header.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// captureDoer wraps the caller's HTTPDoer. It is the only place that sees
// *http.Response, so it is where status, headers and bodies are recorded.
type captureDoer struct{ next HTTPDoer }

func (d captureDoer) Do(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(captureKey{}).(*capture)
	if c != nil && c.prefix {
		var err error
		if req, err = withPrefix(req); err != nil {
			return nil, err
		}
	}
	resp, err := d.next.Do(req)
	if err != nil || c == nil {
		if err == nil {
			limitBody(req, resp)
			teeBody(req, resp)
		}
		return resp, err
	}
	c.status = resp.StatusCode
	c.header = resp.Header.Clone()
	c.resp = resp
	if resp.StatusCode < 200 || resp.StatusCode >= 400 { // go-openai's isFailureStatusCode
		// Read the capped body now and close the original: go-openai reads
		// error bodies fully and never closes them.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxCapture))
		resp.Body.Close()
		c.body = body
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	c.tap = newTap(resp.Body, c.limits)
	resp.Body = c.tap
	return resp, nil
}

// withPrefix returns req with its body's last message marked as the
// prefix the provider continues.
func withPrefix(req *http.Request) (*http.Request, error) {
	if req.Body == nil {
		return nil, errors.New("mark the continued message: the request has no body")
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if body, err = markPrefix(body); err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r, nil
}

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
// It bounds: the bytes of dropped lines and of empty data lines count as
// received without progress (the stream adds data events that carried no
// delta, and resets the count on a delta); past limits.idle the tap fails
// the read. One data line longer than limits.event fails it too, since
// go-openai holds a whole line in memory before returning it.
//
// It watches: it records what go-openai drops or reduces to an error (an
// in-stream error event, [DONE], a JSON error body sent with 200). It runs
// ahead of go-openai's parser (bufio reads in blocks, and ahead filters what
// was read but not yet asked for), so what it records is consulted only
// when go-openai reports an error or an empty event, or at the end of the
// body: by then the relevant line has been read.
//
// It counts the events it let through, so the stream can tell whether the
// next one is already there (see stream.ready).
//
// Read and the stream's accounting run on the goroutine that calls Recv;
// Close may come from any goroutine and touches only rc.
type sseTap struct {
	rc  io.ReadCloser
	lim limits

	in       []byte // read buffer; in[pos:end] is not yet filtered
	pos, end int
	rerr     error // rc's error, returned once in[pos:end] is used up

	state   lineState
	prefix  [len("data:")]byte
	npre    int
	lineLen int64  // bytes of the current line after its leading blanks
	out     []byte // bytes owed to go-openai before any more input
	outBuf  [len("data:")]byte
	gap     bool // a bare newline stands for the dropped lines since the last data line

	line      []byte // the current line for the records, capped at maxCapture
	lineOver  bool   // line exceeded maxCapture; the rest is not recorded
	intercept [][]byte
	junk      []byte // non-SSE lines (a JSON error body sent with 200)
	sawDone   bool   // data: [DONE]
	sawData   bool   // any data: line

	idle    int64       // bytes received without progress, see above
	limited *LimitError // the limit that ended the body, once one did

	// events counts the data lines go-openai returns as events (not empty,
	// not [DONE], not an error) that the filter has finished: handed to
	// go-openai, or staged. The stream compares it with the events it took
	// to tell whether the next one is there without waiting.
	events int64
	// stage holds input ahead filtered, not yet handed to go-openai:
	// stage[spos:send].
	stage      []byte
	spos, send int
}

func newTap(rc io.ReadCloser, lim limits) *sseTap {
	return &sseTap{rc: rc, lim: lim.withDefaults(), in: make([]byte, tapReadSize)}
}

func (t *sseTap) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if t.spos < t.send {
		n := copy(p, t.stage[t.spos:t.send])
		t.spos += n
		return n, nil
	}
	for {
		n := t.filter(p)
		if n > 0 {
			return n, nil
		}
		if t.limited != nil {
			return 0, t.limited
		}
		if t.pos < t.end {
			continue
		}
		if t.rerr != nil {
			if t.state != lineStart {
				t.endLine() // the last line had no newline (a bare JSON body)
			}
			return 0, t.rerr
		}
		m, err := t.rc.Read(t.in)
		t.pos, t.end, t.rerr = 0, m, err
	}
}

func (t *sseTap) Close() error { return t.rc.Close() }

// ahead filters the input already read, without reading more, so that the
// events in it are counted. go-openai reads the staged bytes before any
// more input; the limits see the lines as they are filtered, up to
// tapReadSize earlier than they would have been.
func (t *sseTap) ahead() {
	if t.pos >= t.end && len(t.out) == 0 {
		return
	}
	if t.stage == nil {
		t.stage = make([]byte, tapReadSize)
	}
	n := copy(t.stage, t.stage[t.spos:t.send])
	t.spos, t.send = 0, n+t.filter(t.stage[n:])
}

// progress is the stream's report of a delta: what came before was not
// without progress after all.
func (t *sseTap) progress() { t.idle = 0 }

// noProgress adds n bytes received without progress and reports the limit
// error once they pass the limit.
func (t *sseTap) noProgress(n int64) *LimitError {
	t.idle += n
	if t.idle > t.lim.idle && t.limited == nil {
		t.limited = &LimitError{Kind: LimitIdle, Limit: t.lim.idle}
	}
	return t.limited
}

// filter moves filtered input into p and returns how much it wrote. It stops
// when p is full, the input is used up, or a limit is hit.
func (t *sseTap) filter(p []byte) int {
	n := 0
	for n < len(p) && t.limited == nil {
		if len(t.out) > 0 {
			c := copy(p[n:], t.out)
			t.out, n = t.out[c:], n+c
			continue
		}
		if t.pos >= t.end {
			break
		}
		b := t.in[t.pos:t.end]
		switch t.state {
		case lineStart:
			i := 0
			for i < len(b) && isBlank(b[i]) {
				i++
			}
			t.pos += i
			if t.noProgress(int64(i)) != nil || i == len(b) {
				continue
			}
			t.state = linePrefix
		case linePrefix:
			for t.pos < t.end && t.npre < len(t.prefix) && t.in[t.pos] != '\n' {
				t.prefix[t.npre] = t.in[t.pos]
				t.npre++
				t.pos++
			}
			full := t.npre == len(t.prefix)
			if !full && t.pos == t.end {
				continue // wait for more input
			}
			pre := t.prefix[:t.npre]
			t.npre = 0
			t.record(pre)
			t.lineLen = int64(len(pre))
			if full && string(pre) == "data:" {
				t.state, t.gap = lineData, false
				t.out = append(t.outBuf[:0], pre...)
			} else {
				t.state = lineOther
				t.noProgress(int64(len(pre)))
			}
		case lineData:
			seg := b
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				seg = b[:i+1]
			}
			c := copy(p[n:], seg)
			seg = seg[:c]
			t.pos, n = t.pos+c, n+c
			eol := seg[len(seg)-1] == '\n'
			if eol {
				seg = seg[:len(seg)-1]
			}
			t.record(seg)
			t.lineLen += int64(len(seg))
			if t.lineLen > t.lim.event {
				t.limited = &LimitError{Kind: LimitEvent, Limit: t.lim.event}
				break
			}
			if eol {
				t.endLine()
			}
		case lineOther:
			seg := b
			i := bytes.IndexByte(b, '\n')
			if i >= 0 {
				seg = b[:i]
			}
			t.record(seg)
			t.pos += len(seg)
			t.lineLen += int64(len(seg))
			if t.noProgress(int64(len(seg))) != nil {
				break
			}
			if i >= 0 {
				t.pos++
				t.noProgress(1)
				t.endLine()
				if !t.gap {
					t.out, t.gap = append(t.outBuf[:0], '\n'), true
				}
			}
		}
	}
	return n
}

// isBlank reports the ASCII white space go-openai trims before "data:".
func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// record keeps up to maxCapture bytes of the current line for endLine.
func (t *sseTap) record(b []byte) {
	if t.lineOver {
		return
	}
	if room := maxCapture - len(t.line); len(b) > room {
		b, t.lineOver = b[:room], true
	}
	t.line = append(t.line, b...)
}

func (t *sseTap) endLine() {
	state := t.state
	if state == linePrefix { // a line shorter than "data:"
		t.record(t.prefix[:t.npre])
		t.noProgress(int64(t.npre))
		t.npre = 0
		state = lineOther
	}
	line := bytes.TrimSpace(t.line)
	lineLen := t.lineLen
	t.line, t.lineOver, t.lineLen, t.state = t.line[:0], false, 0, lineStart
	switch {
	case state == lineData:
		t.sawData = true
		payload := bytes.TrimSpace(line[len("data:"):])
		switch {
		case len(payload) == 0:
			t.noProgress(lineLen + 1) // go-openai returns it as an empty event
		case string(payload) == "[DONE]":
			t.sawDone = true
		case goOpenAIErrorPrefix.Match(line):
			if len(t.intercept) < 16 {
				t.intercept = append(t.intercept, bytes.Clone(payload))
			}
		default:
			t.events++
		}
	case len(line) == 0, line[0] == ':':
		// blank separator or SSE comment (keep-alive)
	case bytes.HasPrefix(line, []byte("event:")), bytes.HasPrefix(line, []byte("id:")), bytes.HasPrefix(line, []byte("retry:")):
	default:
		if room := maxCapture - len(t.junk); room > 0 {
			t.junk = append(t.junk, line[:min(len(line), room)]...)
		}
	}
}

// popIntercepted returns the oldest payload go-openai swallowed, if any.
func (t *sseTap) popIntercepted() ([]byte, bool) {
	if t == nil || len(t.intercept) == 0 {
		return nil, false
	}
	p := t.intercept[0]
	t.intercept = t.intercept[1:]
	return p, true
}

// errorFacts are the structured fields of a provider's error JSON.
type errorFacts struct {
	Code, Type, Param, Message, RequestID string
}

func (f errorFacts) empty() bool { return f.Code == "" && f.Type == "" && f.Message == "" }

// parseErrorFacts reads an error object in the shapes providers use:
//
//	{"error":{"message":..,"type":..,"code":..}}          OpenAI, nested
//	{"message":..,"type":..,"code":400}                     vLLM and others, flat
//	{"type":"error","error":{"type":"overloaded_error",..}} Anthropic
//	{"error":"text"}                                        bare string
//	[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}]  Gemini, in an array
//
// A code may be a string or a number; either way it becomes a string. The
// nested object wins; fields it lacks are taken from the top level. When
// there is no "type", a string "status" (Gemini) stands in for it.
func parseErrorFacts(body []byte) (errorFacts, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return errorFacts{}, false
		}
		body = arr[0]
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return errorFacts{}, false
	}
	var f errorFacts
	if raw, ok := top["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil && inner != nil {
			f = factsOf(inner)
		} else {
			f.Message = jsonText(raw)
		}
	}
	flat := factsOf(top)
	if flat.Type == "error" && top["error"] != nil {
		flat.Type = "" // Anthropic's envelope type, not the error's
	}
	f.Code = cmp.Or(f.Code, flat.Code)
	f.Type = cmp.Or(f.Type, flat.Type)
	f.Param = cmp.Or(f.Param, flat.Param)
	f.Message = cmp.Or(f.Message, flat.Message)
	f.RequestID = cmp.Or(f.RequestID, flat.RequestID)
	return f, !f.empty()
}

func factsOf(m map[string]json.RawMessage) errorFacts {
	f := errorFacts{
		Code:      jsonText(m["code"]),
		Type:      jsonString(m["type"]),
		Param:     jsonText(m["param"]),
		Message:   jsonText(m["message"]),
		RequestID: jsonString(m["request_id"]),
	}
	if f.Message == "" {
		f.Message = jsonString(m["detail"]) // FastAPI-style servers
	}
	if f.Type == "" {
		f.Type = jsonString(m["status"])
	}
	return f
}

// jsonString returns a JSON string's value, or "" for anything else.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonText renders a scalar as text: strings unquoted, numbers as written,
// arrays of strings joined (go-openai does the same for messages); null and
// objects give "".
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return jsonString(raw)
	case '[':
		var ss []string
		if json.Unmarshal(raw, &ss) == nil {
			return strings.Join(ss, ", ")
		}
		return ""
	case '{', 'n':
		return ""
	case 't', 'f':
		return string(raw)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		return n.String()
	}
	return ""
}

// snippet is a one-line, bounded excerpt of a body that is not error JSON
// (an HTML page from a proxy), good enough for a person to recognise it.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// withCapture returns ctx carrying a fresh capture for one attempt.
func withCapture(ctx context.Context, lim limits) (context.Context, *capture) {
	c := &capture{limits: lim}
	return context.WithValue(ctx, captureKey{}, c), c
}

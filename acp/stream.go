package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

// MaxLineBytes is the longest input line accepted (excluding its '\n').
// Longer lines are refused with -32700 and discarded as they stream in.
const MaxLineBytes = 16 << 20

// readChunk is the bufio.Reader size: memory per line is bounded by the
// line limit plus this, whatever the client sends.
const readChunk = 64 << 10

// StreamConfig tunes a LineStream. The zero value is the production setting.
type StreamConfig struct {
	// MaxLineBytes caps one input line; 0 means MaxLineBytes. Tests set it
	// small so they need not allocate 16 MiB.
	MaxLineBytes int
	// Logger receives a warning for every refused line. The zero value
	// discards.
	Logger zerolog.Logger
}

// LineStream is a jsonrpc2.ObjectStream for ACP's stdio transport: one
// compact JSON object per '\n'-terminated line in both directions.
//
// It is written out rather than built on jsonrpc2.NewPlainObjectStream
// because that stream's json.Decoder has no size limit, reads values across
// lines, and its errors are fatal: jsonrpc2.Conn closes the connection on
// any ReadObject error, and a syntax error even sticks in the decoder. Here a
// bad line is answered and skipped, so ReadObject only ever fails when the
// input itself ends or breaks. Output is byte-for-byte what
// NewPlainObjectStream writes (json.Marshal, then '\n').
type LineStream struct {
	r     *bufio.Reader
	w     io.Writer
	c     io.Closer
	limit int
	log   zerolog.Logger

	buf []byte // the current line; reused, never much over limit

	// Output. WriteObject writes an idle stream's line itself when
	// writeNow can; otherwise it appends the line to pending and, unless
	// one is running, starts the writer goroutine, which writes everything pending
	// with one Write and loops until nothing is; lines written while it
	// writes go out together in its next Write. Everything below is
	// guarded by mu; cond is signalled when the writer takes pending, ends
	// a Write or stops.
	mu      sync.Mutex
	cond    sync.Cond
	pending []byte // lines not yet taken by the writer
	spare   []byte // the writer's last buffer, for reuse as pending
	writing bool   // the writer goroutine runs, or a WriteLine writes its line
	queued  uint64 // lines appended to pending so far
	written uint64 // lines whose Write has returned
	werr    error  // the first write error; every later write fails with it
	// syncWrites is set when the input ends: the connection is closing, so
	// WriteObject returns only once its line is written. Whoever waits for
	// the last writers (Server's shutdown) then knows their lines are out.
	syncWrites bool
	closed     bool
	// writeNow, when set, writes a line at once if the output takes it
	// without blocking: WriteLine then writes an idle stream's line itself.
	writeNow func(p []byte) (bool, error)

	// ids holds the ids ReadObject substituted (see idPrefix), by number,
	// until the response carrying them is written. Guarded by mu.
	ids    map[uint64]json.RawMessage
	lastID uint64

	// onInputEnd, when set (by Server), is called once the input has
	// ended, instead of ReadObject waiting for the output itself: the
	// server drains its turns and closes the stream within its own budget.
	onInputEnd func(error)
}

// flushTimeout bounds how long Close, and ReadObject at the end of the
// input, wait for pending output to be written, in case nobody reads it;
// closeGrace is how long Close then waits for the writer to end once the
// underlying stream is closed.
const (
	flushTimeout = 5 * time.Second
	closeGrace   = time.Second
)

// errStreamClosed is returned by WriteObject after Close.
var errStreamClosed = errors.New("acp: write to a closed stream")

var _ jsonrpc2.ObjectStream = (*LineStream)(nil)

// NewLineStream frames rwc as newline-delimited JSON. Close closes rwc.
func NewLineStream(rwc io.ReadWriteCloser, cfg StreamConfig) *LineStream {
	limit := cfg.MaxLineBytes
	if limit <= 0 {
		limit = MaxLineBytes
	}
	s := &LineStream{
		r:     bufio.NewReaderSize(rwc, readChunk),
		w:     rwc,
		c:     rwc,
		limit: limit,
		log:   cfg.Logger,
	}
	if st, ok := rwc.(stdio); ok {
		s.writeNow = st.writeNow
	}
	s.cond.L = &s.mu
	return s
}

// ReadObject decodes the next acceptable line into v. Lines that are not
// JSON, too long, not an object, or not a JSON-RPC message are answered with
// an error response (id null unless the id could be read) and skipped;
// blank lines, and responses that can't be read, are skipped silently (a
// response is never answered). It returns an error only when the input
// ends or fails, or a refusal cannot be written.
//
// A request's id is answered exactly as the client sent it: a string, any
// number (-1 included) or null, up to MaxIDBytes; a longer id, or one of
// another type, is refused with -32600 and id null. A request with id null
// is a request, as JSON-RPC 2.0 and ACP's RequestId have it, and gets a
// response (with id null); jsonrpc2 alone would take it for a notification
// and never answer it.
//
// The error ends the connection (jsonrpc2.Conn closes on it), so before
// returning it ReadObject waits, at most flushTimeout, for the output
// written so far, and from then on WriteObject returns only when its line
// is written (or the stream is closed): the replies of turns cancelled at
// shutdown are out before anyone sees the connection closed. A Server
// does that wait itself, within its own budget, before ReadObject returns.
func (s *LineStream) ReadObject(v any) error {
	err := s.readObject(v)
	if err != nil {
		s.inputEnded(err)
	}
	return err
}

func (s *LineStream) inputEnded(err error) {
	s.mu.Lock()
	s.syncWrites = true
	if s.onInputEnd == nil && !s.closed {
		s.waitWriter(flushTimeout)
	}
	s.mu.Unlock()
	if s.onInputEnd != nil {
		s.onInputEnd(err)
	}
}

func (s *LineStream) readObject(v any) error {
	for {
		line, tooLong, err := s.readLine()
		if tooLong {
			s.log.Warn().Int("limit", s.limit).Msg("acp: refused over-long input line")
			if werr := s.refuse(nil, CodeParseError, fmt.Sprintf("Parse error: line longer than %d bytes", s.limit)); werr != nil {
				return werr
			}
		} else if len(line) > 0 {
			ok, r := s.decode(line, v)
			switch {
			case ok:
				return nil
			case r.code == 0:
				s.log.Warn().Str("error", r.msg).Int("bytes", len(line)).Msg("acp: dropped a response that can't be read")
			default:
				s.log.Warn().Int("code", r.code).Str("error", r.msg).Int("bytes", len(line)).Msg("acp: refused input line")
				if werr := s.refuse(r.id, r.code, r.msg); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			return err // io.EOF after the last line, or a read failure
		}
	}
}

// refusal is the error answer to a line that is not read as a message: a
// JSON-RPC error code, its message, and the id to answer with (nil: null).
// A zero code means no answer: the line was a response, and JSON-RPC
// forbids answering those; msg then says what was wrong, for the log.
type refusal struct {
	code int
	msg  string
	id   json.RawMessage
}

// decode fills v from one trimmed, non-empty line, or says why it can't.
//
// Before jsonrpc2 sees a request, its id is checked and, if jsonrpc2
// would not carry it back unchanged, substituted (see idPrefix).
func (s *LineStream) decode(line []byte, v any) (ok bool, r refusal) {
	if line[0] != '{' {
		var raw json.RawMessage
		switch err := json.Unmarshal(line, &raw); {
		case err != nil:
			return false, refusal{code: CodeParseError, msg: "Parse error: " + err.Error()}
		case line[0] == '[':
			return false, refusal{code: CodeInvalidRequest, msg: "Invalid Request: batches are not supported"}
		default:
			return false, refusal{code: CodeInvalidRequest, msg: "Invalid Request: a message must be a JSON object"}
		}
	}
	// The members as jsonrpc2.Request reads them: exact names, the last of
	// repeated ones. (Struct fields would match names in any case.)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return false, refusal{code: CodeParseError, msg: "Parse error: " + err.Error()}
	}
	rawID, hasID := m["id"]
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	isResponse := !hasMethod && (hasResult || len(m["error"]) > 0 && string(m["error"]) != "null")
	var sub uint64 // the substitute id's number, 0 if none
	if hasID && hasMethod {
		if msg := checkID(rawID); msg != "" {
			return false, refusal{code: CodeInvalidRequest, msg: msg}
		}
		if !carriedAsIs(rawID) {
			sub = s.substitute(rawID)
			m["id"] = substituteJSON(sub)
			line, _ = json.Marshal(m) // cannot fail: every member was just decoded
		}
	}
	// A failed decode may have filled parts of v (jsonrpc2's message type
	// sets its request or response half first); the next line must start
	// from zero or it could be taken for the wrong kind of message.
	reflect.ValueOf(v).Elem().SetZero()
	err := json.Unmarshal(line, v)
	if err == nil {
		return true, refusal{}
	}
	reflect.ValueOf(v).Elem().SetZero()
	if sub != 0 {
		s.takeID(sub)
	}
	if isResponse {
		return false, refusal{msg: err.Error()}
	}
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return false, refusal{code: CodeParseError, msg: "Parse error: " + err.Error()}
	}
	r = refusal{code: CodeInvalidRequest, msg: "Invalid Request: " + err.Error()}
	if hasID && checkID(rawID) == "" {
		r.id = rawID // the spec says null unless the id could be detected
	}
	return false, r
}

// readLine returns the next line without its line ending and surrounding
// whitespace. A line over the limit is consumed to its end but not kept:
// tooLong is set and line is nil. err is set with the last (possibly
// unterminated) line or alone.
func (s *LineStream) readLine() (line []byte, tooLong bool, err error) {
	s.buf = s.buf[:0]
	if cap(s.buf) > 4*readChunk {
		s.buf = nil // don't pin a big earlier line's memory for the session
	}
	for {
		frag, err := s.r.ReadSlice('\n')
		if !tooLong {
			n := len(s.buf) + len(frag)
			if err == nil {
				n-- // the '\n' doesn't count
			}
			if n > s.limit {
				tooLong = true
				s.buf = s.buf[:0]
			} else {
				s.buf = append(s.buf, frag...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && tooLong:
			return nil, true, err
		case tooLong:
			return nil, true, nil
		default:
			return bytes.TrimSpace(s.buf), false, err
		}
	}
}

// refuse answers a line the connection will never see with an error
// response. The id goes out as the client sent it: json.Marshal would
// re-escape it ('&' as \u0026), and the client could not match it.
func (s *LineStream) refuse(id json.RawMessage, code int, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	e, err := json.Marshal(jsonrpc2.Error{Code: int64(code), Message: msg})
	if err != nil {
		return err
	}
	line := make([]byte, 0, 64+len(id)+len(e))
	line = append(append(append(line, `{"jsonrpc":"2.0","id":`...), id...), `,"error":`...)
	return s.WriteLine(append(append(line, e...), "}\n"...))
}

// Close writes what is pending, waiting at most flushTimeout (5 s) for it,
// then closes the underlying ReadWriteCloser, which may unblock a Write
// nobody reads (a pipe's; StdioConn leaves stdout open), waits at most
// closeGrace (1 s) more for the writer goroutine to end, and returns. It
// returns the write error, if a Write failed, with that of closing. Later
// WriteObjects fail, and so do those waiting for room or for their line to
// be written. Only the first Close does this; later ones return nil at
// once.
func (s *LineStream) Close() error {
	return s.closeWithin(flushTimeout)
}

// closeWithin is Close with at most d (none if d <= 0) for the pending
// output to be written before the underlying stream is closed.
func (s *LineStream) closeWithin(d time.Duration) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cond.Broadcast() // writers waiting for room or for their line give up
	flushed := !s.writing
	if !flushed && d > 0 {
		flushed = s.waitWriter(d)
	}
	s.mu.Unlock()

	err := s.c.Close()

	s.mu.Lock()
	defer s.mu.Unlock()
	if !flushed && !s.waitWriter(closeGrace) {
		err = errors.Join(err, fmt.Errorf("acp: output not written after %v: nobody reads it (%d bytes dropped, more in a Write that never returned)",
			max(d, 0)+closeGrace, len(s.pending)))
		s.pending = nil
	}
	if s.werr != nil && !errors.Is(err, s.werr) {
		err = errors.Join(fmt.Errorf("acp: write: %w", s.werr), err)
	}
	return err
}

// StdioConn joins an input and an output into the io.ReadWriteCloser that
// NewLineStream takes. Close closes in when it is an io.Closer, so a read
// blocked on it returns; out is left open: it is stdout, and the caller's.
func StdioConn(in io.Reader, out io.Writer) io.ReadWriteCloser {
	return stdio{in: in, out: out, writeNow: writeNowFunc(out)}
}

type stdio struct {
	in  io.Reader
	out io.Writer
	// writeNow writes a line if out takes it without blocking (see
	// writeNowFunc); nil when that can't be told.
	writeNow func(p []byte) (bool, error)
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s stdio) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

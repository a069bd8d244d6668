package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
//
// It joins three parts, each with a job: in (linereader.go) reads lines
// within the limit, decode (decode.go) reads one as a message or says why
// not, out (writer.go) writes lines and owns the flush policy, and ids
// (ids.go) carries substituted request ids from one side to the other.
type LineStream struct {
	in  *lineReader
	out *lineWriter
	ids idTable
	c   io.Closer
	log zerolog.Logger

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
	var writeNow func(p []byte) (bool, error)
	if st, ok := rwc.(stdio); ok {
		writeNow = st.writeNow
	}
	return &LineStream{
		in:  newLineReader(rwc, limit),
		out: newLineWriter(rwc, writeNow),
		c:   rwc,
		log: cfg.Logger,
	}
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
		s.out.inputEnded(s.onInputEnd == nil)
		if s.onInputEnd != nil {
			s.onInputEnd(err)
		}
	}
	return err
}

func (s *LineStream) readObject(v any) error {
	for {
		line, tooLong, err := s.in.readLine()
		if tooLong {
			s.log.Warn().Int("limit", s.in.limit).Msg("acp: refused over-long input line")
			if werr := s.refuse(nil, CodeParseError, fmt.Sprintf("Parse error: line longer than %d bytes", s.in.limit)); werr != nil {
				return werr
			}
		} else if len(line) > 0 {
			ok, r := decode(line, v, &s.ids)
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

// WriteObject writes v as one compact JSON line: json.Marshal's bytes and
// '\n' (json.Marshal escapes '\n' inside strings, so a message never spans
// lines). Lines go out whole and in the order of the WriteObject calls, so
// messages from concurrent turns never interleave.
//
// The line is queued, not written, when WriteObject returns (except once
// the input has ended, see ReadObject): the writer goroutine writes all
// queued lines with one Write, so a burst of notifications costs a few
// writes, and an idle stream still writes each line at once. On an idle
// stream whose output is a file (StdioConn's stdout) that can take the line
// without blocking, WriteObject writes it itself: a line at a time, as a
// model streams, then wakes no other goroutine. If more than
// 4 MiB waits (the reader is slow), WriteObject waits for the writer. A
// failed Write is not lost: the next WriteObject returns its error, and so
// does every later one, without writing.
func (s *LineStream) WriteObject(v any) error {
	e := lineEncoders.Get().(*lineEncoder)
	defer e.put()
	line, err := e.encode(v)
	if err != nil {
		return err
	}
	return s.WriteLine(s.ids.restore(line))
}

// WriteLine queues a message that is already one line: compact JSON, as
// json.Marshal writes it, ending in '\n'. It is WriteObject for a hot path
// that encodes its own messages; line is copied before WriteLine returns.
func (s *LineStream) WriteLine(line []byte) error {
	return s.out.write(line)
}

// idText is the id the client sent for req's id, for logs.
func (s *LineStream) idText(id jsonrpc2.ID) string {
	return s.ids.text(id)
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
	return s.out.close(d, s.c.Close)
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

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

	mu sync.Mutex // serialises writes: replies, notifications, refusals
}

var _ jsonrpc2.ObjectStream = (*LineStream)(nil)

// NewLineStream frames rwc as newline-delimited JSON. Close closes rwc.
func NewLineStream(rwc io.ReadWriteCloser, cfg StreamConfig) *LineStream {
	limit := cfg.MaxLineBytes
	if limit <= 0 {
		limit = MaxLineBytes
	}
	return &LineStream{
		r:     bufio.NewReaderSize(rwc, readChunk),
		w:     rwc,
		c:     rwc,
		limit: limit,
		log:   cfg.Logger,
	}
}

// ReadObject decodes the next acceptable line into v. Lines that are not
// JSON, too long, not an object, or not a JSON-RPC message are answered with
// an error response (id null unless the id could be read) and skipped;
// blank lines are skipped silently. It returns an error only when the input
// ends or fails, or a refusal cannot be written.
func (s *LineStream) ReadObject(v any) error {
	for {
		line, tooLong, err := s.readLine()
		if tooLong {
			s.log.Warn().Int("limit", s.limit).Msg("acp: refused over-long input line")
			if werr := s.refuse(nil, CodeParseError, fmt.Sprintf("Parse error: line longer than %d bytes", s.limit)); werr != nil {
				return werr
			}
		} else if len(line) > 0 {
			code, msg := s.decode(line, v)
			if code == 0 {
				return nil
			}
			s.log.Warn().Int("code", code).Str("error", msg).Int("bytes", len(line)).Msg("acp: refused input line")
			if werr := s.refuse(requestID(line, code), code, msg); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err // io.EOF after the last line, or a read failure
		}
	}
}

// decode fills v from one trimmed line, or says why it can't: the JSON-RPC
// error code (0 on success) and message.
func (s *LineStream) decode(line []byte, v any) (code int, msg string) {
	if line[0] != '{' {
		var raw json.RawMessage
		switch err := json.Unmarshal(line, &raw); {
		case err != nil:
			return CodeParseError, "Parse error: " + err.Error()
		case line[0] == '[':
			return CodeInvalidRequest, "Invalid Request: batches are not supported"
		default:
			return CodeInvalidRequest, "Invalid Request: a message must be a JSON object"
		}
	}
	// A failed decode may have filled parts of v (jsonrpc2's message type
	// sets its request or response half first); the next line must start
	// from zero or it could be taken for the wrong kind of message.
	reflect.ValueOf(v).Elem().SetZero()
	err := json.Unmarshal(line, v)
	if err == nil {
		return 0, ""
	}
	reflect.ValueOf(v).Elem().SetZero()
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return CodeParseError, "Parse error: " + err.Error()
	}
	return CodeInvalidRequest, "Invalid Request: " + err.Error()
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

// requestID is the id to answer a refused line with: the spec says null
// unless it could be detected, and for an Invalid Request it often can be.
func requestID(line []byte, code int) json.RawMessage {
	if code != CodeInvalidRequest {
		return nil
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch m.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.ID
	}
	return nil
}

// wireRefusal is an error response the connection never saw a request for.
type wireRefusal struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonrpc2.Error  `json:"error"`
}

func (s *LineStream) refuse(id json.RawMessage, code int, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	return s.WriteObject(wireRefusal{JSONRPC: "2.0", ID: id, Error: jsonrpc2.Error{Code: int64(code), Message: msg}})
}

// WriteObject writes v as one compact JSON line with a single Write, so
// messages from concurrent turns never interleave. json.Marshal escapes
// '\n' inside strings, so a message never spans lines.
func (s *LineStream) WriteObject(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err = s.w.Write(b)
	return err
}

// Close closes the underlying ReadWriteCloser.
func (s *LineStream) Close() error { return s.c.Close() }

// StdioConn joins an input and an output into the io.ReadWriteCloser that
// NewLineStream takes. Close closes in when it is an io.Closer, so a read
// blocked on it returns; out is left open: it is stdout, and the caller's.
func StdioConn(in io.Reader, out io.Writer) io.ReadWriteCloser {
	return stdio{in: in, out: out}
}

type stdio struct {
	in  io.Reader
	out io.Writer
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s stdio) Close() error {
	if c, ok := s.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

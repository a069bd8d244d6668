package acp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// maxPending is how much output may wait for the writer: when it is reached
// (the reader is slow), WriteObject waits for the writer to take it.
const maxPending = 4 << 20

// maxSpare is the largest buffer kept for reuse once written.
const maxSpare = 256 << 10

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
	return s.WriteLine(s.restoreID(line))
}

// WriteLine queues a message that is already one line: compact JSON, as
// json.Marshal writes it, ending in '\n'. It is WriteObject for a hot path
// that encodes its own messages; line is copied before WriteLine returns.
func (s *LineStream) WriteLine(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 && len(s.pending)+len(line) > maxPending && s.werr == nil && !s.closed {
		s.cond.Wait()
	}
	switch {
	case s.werr != nil:
		return s.werr
	case s.closed:
		return errStreamClosed
	}
	if !s.writing && len(s.pending) == 0 && s.writeNow != nil {
		return s.writeIdle(line)
	}
	s.pending = append(s.pending, line...)
	s.queued++
	if !s.writing {
		s.writing = true
		go s.writeLoop()
	}
	return s.waitWritten(s.queued)
}

// writeIdle writes line, with s.mu held and nothing pending or being
// written, from the caller's goroutine if the output takes it without
// blocking, and otherwise queues it for the writer goroutine. Lines
// queued meanwhile come after it: the writing flag holds them back.
func (s *LineStream) writeIdle(line []byte) error {
	s.queued++
	n := s.queued
	s.writing = true
	s.mu.Unlock()
	wrote, err := s.writeNow(line)
	s.mu.Lock()
	if !wrote {
		// It would block (the reader is slow): the writer goroutine
		// waits for it, ahead of what was queued meanwhile.
		s.pending = slices.Insert(s.pending, 0, line...)
		go s.writeLoop()
		return s.waitWritten(n)
	}
	s.written = n
	if err != nil {
		s.werr = err
		s.pending = nil
	}
	if len(s.pending) > 0 && s.werr == nil {
		go s.writeLoop()
	} else {
		s.writing = false
	}
	s.cond.Broadcast()
	if s.syncWrites {
		return s.werr
	}
	return nil
}

// waitWritten, with s.mu held, waits for line n to be written once the
// input has ended (see ReadObject); before that it returns at once.
func (s *LineStream) waitWritten(n uint64) error {
	if !s.syncWrites {
		return nil
	}
	for s.written < n && s.werr == nil && !s.closed {
		s.cond.Wait()
	}
	if s.written < n && s.werr == nil {
		return errStreamClosed // Close gave up on the output
	}
	return s.werr
}

// writeLoop writes what is pending until nothing is, then ends.
func (s *LineStream) writeLoop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 && s.werr == nil {
		out, n := s.pending, s.queued
		s.pending, s.spare = s.spare[:0], nil
		s.cond.Broadcast() // room for writers waiting on maxPending
		s.mu.Unlock()
		_, err := s.w.Write(out)
		s.mu.Lock()
		if err != nil {
			s.werr = err
			s.pending = nil
		}
		s.written = n
		if cap(out) <= maxSpare {
			s.spare = out
		}
		s.cond.Broadcast()
	}
	s.writing = false
	s.cond.Broadcast()
}

// waitWriter waits, with s.mu held, until the writer has written all that
// is pending and ended, or for d. It reports whether the writer ended.
func (s *LineStream) waitWriter(d time.Duration) bool {
	if !s.writing {
		return true
	}
	expired := false
	t := time.AfterFunc(d, func() {
		s.mu.Lock()
		expired = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	for s.writing && !expired {
		s.cond.Wait()
	}
	return !s.writing
}

// lineEncoder marshals one line; pooled so WriteObject allocates nothing
// for itself. Encode writes json.Marshal's bytes (HTML escaping included)
// and '\n'.
type lineEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var lineEncoders = sync.Pool{New: func() any {
	e := new(lineEncoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// encode returns json.Marshal's bytes for v and '\n'. The result is valid
// until e is put back.
func (e *lineEncoder) encode(v any) ([]byte, error) {
	if m, ok := v.(json.Marshaler); ok && fromJSONRPC2(v) {
		// jsonrpc2.Conn's messages marshal themselves with json.Marshal,
		// so their bytes are what json.Marshal(v) would write: it would
		// only check and compact them again, a third scan of every
		// message. The quick check below covers what compacting could
		// still change.
		b, err := m.MarshalJSON()
		if err != nil {
			return nil, &json.MarshalerError{Type: reflect.TypeOf(v), Err: err}
		}
		if compactEscaped(b) {
			return append(b, '\n'), nil
		}
	}
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// fromJSONRPC2 reports whether v is one of the jsonrpc2 package's types,
// or a non-nil pointer to one.
func fromJSONRPC2(v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return false
		}
		rv = rv.Elem()
	}
	return rv.Type().PkgPath() == jsonrpc2PkgPath
}

var jsonrpc2PkgPath = reflect.TypeFor[jsonrpc2.Request]().PkgPath()

// compactEscaped reports whether b, which must be valid JSON, is left as it
// is by json.Marshal's compacting of a Marshaler's output: no whitespace
// outside strings, and no '<', '>', '&', U+2028 or U+2029 to escape.
func compactEscaped(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !jsonSpecial[c] {
			continue
		}
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2:
			if i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8 {
				return false
			}
		case c == '"':
			inString = !inString
		case inString:
			if c == '\\' {
				i++ // the escaped byte can't end the string
			}
		default: // whitespace outside a string
			return false
		}
	}
	return true
}

// jsonSpecial marks the bytes compactEscaped looks at.
var jsonSpecial = [256]bool{'<': true, '>': true, '&': true, 0xE2: true, '"': true, '\\': true, ' ': true, '\t': true, '\n': true, '\r': true}

func (e *lineEncoder) put() {
	if e.buf.Cap() > maxSpare {
		return // don't keep a big message's buffer
	}
	e.buf.Reset()
	lineEncoders.Put(e)
}

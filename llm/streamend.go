package llm

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	openai "github.com/sashabaranov/go-openai"
)

// How a stream ends: the one io.EOF, or an error that says why.

// readError explains why go-openai stopped reading. go-openai returns a
// plain io.EOF both after [DONE] and when the body just ends, so completeness
// is judged by whether a finish reason was seen, nothing else.
func (s *stream) readError(err error) error {
	eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if eof && s.finished {
		// Also when the connection broke after the finish chunk, while only
		// usage and [DONE] were still due: the reply itself is complete.
		return io.EOF // the only way Recv returns io.EOF
	}
	if s.closed.Load() {
		return fmt.Errorf("read stream: %w", ErrStreamClosed)
	}
	tap := s.cap.tap
	if le := tap.budget.limited; le != nil {
		return s.limitError(le)
	}
	if s.parent.Err() != nil {
		return withCause(s.parent, fmt.Errorf("read stream: %w", err))
	}
	if junk := tap.watch.junk; (eof || isGoOpenAIEventErr(err)) && len(junk) > 0 {
		return s.notAnEventStream(junk)
	}
	if ae, ok := errors.AsType[*openai.APIError](err); ok {
		// An error go-openai parsed that the tap did not see; keep its facts.
		e := s.streamError(nil, err)
		e.Code, e.Type, e.Message = jsonText(mustJSON(ae.Code)), ae.Type, ae.Message
		return s.o.scrub(e)
	}
	if errors.Is(err, openai.ErrTooManyEmptyStreamMessages) {
		return fmt.Errorf("%w: %w", ErrMalformedStream, err)
	}
	if !eof {
		return s.o.scrub(fmt.Errorf("read stream: %w", err))
	}
	why := "the body ended without a finish reason or [DONE]"
	if tap.watch.sawDone {
		why = "[DONE] arrived but no chunk carried a finish reason"
	}
	return &RequestIDError{RequestID: s.o.redact.str(s.cap.requestID()),
		Err: fmt.Errorf("%w: %s: %w", ErrIncompleteStream, why, io.ErrUnexpectedEOF)}
}

// notAnEventStream is the error of a 2xx body that was not an event stream:
// a JSON error body sent with 2xx, or a page.
func (s *stream) notAnEventStream(junk []byte) error {
	if _, ok := parseErrorFacts(junk); ok {
		return s.o.scrub(s.streamError(junk, nil))
	}
	if page, ok := s.o.pageMessage(s.cap.status, s.cap.header, junk); ok {
		return s.o.scrub(fmt.Errorf("%w: %s", ErrMalformedStream, page))
	}
	return s.o.scrub(fmt.Errorf("%w: response body is not an event stream: %s", ErrMalformedStream, s.o.snippet(junk)))
}

// streamError is an error the provider reported after answering 2xx: an
// in-stream error event, or a JSON error object sent as the whole body.
func (s *stream) streamError(payload []byte, goErr error) *Error {
	e := &Error{
		Status:    s.cap.status,
		Header:    s.cap.header,
		RequestID: s.cap.requestID(),
		Body:      payload,
		InStream:  true,
		Err:       goErr,
	}
	if f, ok := parseErrorFacts(payload); ok {
		e.Code, e.Type, e.Param, e.Message = f.Code, f.Type, f.Param, f.Message
		e.RequestID = cmp.Or(e.RequestID, f.RequestID)
	} else {
		e.Message = "unreadable error event: " + s.o.snippet(payload)
	}
	return e
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

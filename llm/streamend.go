package llm

import (
	"bytes"
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
		if st := httpStatus([]byte(e.Code)); st != 0 {
			e.Status = st
		}
		return s.o.scrub(e)
	}
	if errors.Is(err, openai.ErrTooManyEmptyStreamMessages) {
		return fmt.Errorf("%w: %w", ErrMalformedStream, err)
	}
	if !eof {
		return s.o.scrub(fmt.Errorf("read stream: %w", err))
	}
	if st := s.commentStatus(); st != 0 {
		// A gateway said the upstream failed with st, and sent nothing
		// more: that status is the failure, not the connection.
		e := s.streamError(nil, nil)
		e.Message = fmt.Sprintf("the stream ended after the gateway reported HTTP %d from upstream", st)
		return s.o.scrub(e)
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
		e.Type = cmp.Or(e.Type, errorTypeOf(payload))
		e.RequestID = cmp.Or(e.RequestID, f.RequestID)
	} else if text := bytes.TrimSpace(payload); len(text) > 0 && !json.Valid(text) {
		e.Message = s.o.snippet(text) // an error event's plain text
	} else {
		e.Message = "unreadable error event: " + s.o.snippet(payload)
	}
	// The status the frame carries, else one a comment gave before it:
	// the error's HTTP equivalent (see streamerror.go).
	if st := cmp.Or(frameStatus(payload), s.commentStatus()); st != 0 {
		e.Status = st
	}
	return e
}

// finishError is the failure of an attempt whose finish reason says it
// failed (FinishFailed) or that Rebound does not know: an in-stream error
// of type "finish_reason" whose code is the reason, so recovery retries it
// as a server error mid-reply, and a user rule can match it
// (finish_reason=network_error, or msg~network_error).
func (s *stream) finishError(reason string) error {
	e := s.streamError(nil, nil)
	r := reason
	if len(r) > 64 { // the provider's word, bounded
		r = r[:64] + "…"
	}
	e.Type, e.Code = "finish_reason", r
	// A rule's field=value reads the error JSON: finish_reason=network_error.
	e.Body = mustJSON(map[string]string{"finish_reason": r})
	if ClassifyFinish(reason) == FinishUnknown {
		e.Message = fmt.Sprintf("the provider ended the reply with finish_reason %q, which Rebound does not know, so it is not taken as finished", r)
	} else {
		e.Message = fmt.Sprintf("the provider broke off the reply (finish_reason %q)", r)
	}
	return s.o.scrub(e)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// commentStatus is the status a gateway's comment gave (sse.go), or 0.
func (s *stream) commentStatus() int {
	if t := s.cap.tap; t != nil {
		return t.watch.status
	}
	return 0
}

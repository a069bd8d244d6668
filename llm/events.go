package llm

import (
	"errors"

	openai "github.com/sashabaranov/go-openai"
)

// rawReader is what the events reader takes from go-openai: its
// *openai.ChatCompletionStream, read raw.
type rawReader interface {
	RecvRaw() ([]byte, error)
	Close() error
}

// events is the second half of stage 1, SSE events (see sse.go): the
// payloads of the data events, one at a time, as go-openai's RecvRaw
// returns them ("data:" stripped, [DONE] and the body's end an io.EOF),
// with the tap's verbatim copy put back where go-openai swallowed an error
// event. It also tells whether the next event can be read without waiting
// (ready), which is what lets the joiner join only what already arrived.
//
// From go-openai it takes RecvRaw and nothing of its chunk types: decoding
// is the next stage's (decode.go).
type events struct {
	st      rawReader
	tap     *sseTap
	pending error // a read error seen while returning an intercepted payload
	took    int64 // events RecvRaw returned, to compare with the tap's count
	// errEvent: the payload next returned last was sent under the event
	// name "error" (see errorEvent).
	errEvent bool
}

// errorEvent reports whether the payload next returned last was sent as an
// SSE event named "error": the provider's error, whatever its shape (flat
// JSON, or plain text).
func (e *events) errorEvent() bool { return e.errEvent }

// next returns the next data event's payload, never an empty one. Unless
// wait, it reads only while an event is ready, and reports false when it
// would have to wait. err is go-openai's read error as it came (io.EOF at
// [DONE] or the body's end, an *openai.APIError for a swallowed event it
// parsed, a transport error); the caller explains it.
func (e *events) next(wait bool) (raw []byte, ok bool, err error) {
	for {
		if !wait && e.pending == nil && !e.ready() {
			return nil, false, nil
		}
		raw, err := e.recv()
		if err != nil || len(raw) > 0 {
			return raw, true, err
		}
	}
}

// recv is one RecvRaw, with the intercepted payload in place of what
// go-openai made of it.
func (e *events) recv() ([]byte, error) {
	if err := e.pending; err != nil {
		e.pending = nil
		return nil, err
	}
	e.errEvent = false
	raw, err := e.st.RecvRaw()
	if len(raw) > 0 {
		e.took++
		e.errEvent = e.tap != nil && e.tap.watch.isErrorEvent(e.took)
		return raw, err
	}
	if e.tap == nil {
		return nil, err
	}
	// go-openai swallowed a `data: {"error":` line and reports it as an
	// error (or as nothing): the tap's verbatim copy is decoded instead.
	// go-openai's own "error, …" for that line is superseded; a real read
	// error is kept for the next round.
	if p, ok := e.tap.watch.popIntercepted(); ok {
		if err != nil && !isGoOpenAIEventErr(err) {
			e.pending = err
		}
		return p, nil
	}
	return nil, err
}

// ready reports whether the next event can be read without waiting: its
// line is in go-openai's buffer or in the tap's.
func (e *events) ready() bool {
	t := e.tap
	if t == nil {
		return false
	}
	if t.watch.events > e.took {
		return true
	}
	t.ahead()
	return t.watch.events > e.took
}

// isGoOpenAIEventErr reports go-openai's wrapping of an in-stream error
// event ("error, %w" around *openai.APIError).
func isGoOpenAIEventErr(err error) bool {
	_, ok := errors.AsType[*openai.APIError](err)
	return ok
}

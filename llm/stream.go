package llm

import (
	"context"
	"sync"
	"sync/atomic"
)

// stream is one attempt's response body, read in five stages, each in its
// own file and tested alone:
//
//  1. SSE events (sse.go, events.go): the body's lines, filtered and
//     bounded beneath go-openai's reader, and the data payloads it returns,
//     with the error events it swallows put back;
//  2. chunk decoding (decode.go, finish.go, streamerror.go, think.go): a
//     payload to a Chunk, the provider's error (in any framing, with the
//     HTTP status it carries), or a malformed stream; a finish reason by
//     its class; a leading think block in the content to thoughts;
//  3. joining (join.go): deltas of one kind that arrived together, and a
//     tool call's argument fragments, into one chunk;
//  4. the secret scrubber (redact.go): the API key out of every text,
//     holding back what may be the start of it;
//  5. continuation trimming (echo.go): a provider's repeat of the prefix
//     it continues dropped.
//
// stream itself only joins them: it reads (read) stage 1 into stage 2,
// applies the response limits (account) and turns the end of the body into
// io.EOF or an error that says why (streamend.go); Recv runs stages 3 to 5.
// Only Recv's goroutine touches the stages; Close may come from any
// goroutine.
type stream struct {
	o      *OpenAI
	parent context.Context
	cancel context.CancelCauseFunc
	cap    *capture
	events events
	join   joiner
	scrub  scrubber
	echo   *echo // nil if no repeat of the prefix can come
	// think extracts a leading think block from the content (think.go);
	// nil for a reply continued in place, whose content starts mid-reply.
	think *thinker

	// failed is the error an attempt ends with once the deltas decoded
	// with it are returned: a finish reason that says the attempt failed.
	failed error

	closed    atomic.Bool // Close was called
	closeOnce sync.Once

	finished bool  // a chunk carried a finish_reason
	err      error // sticky terminal result (io.EOF or a failure)
	replied  int64 // bytes of content, reasoning and tool calls so far
}

func newStream(o *OpenAI, parent context.Context, cancel context.CancelCauseFunc, st rawReader, c *capture, trim *echo) *stream {
	s := &stream{o: o, parent: parent, cancel: cancel, cap: c, events: events{st: st, tap: c.tap},
		scrub: scrubber{r: o.redact}, echo: trim}
	s.join = joiner{src: s, off: o.noJoin}
	if !c.prefix {
		s.think = &thinker{}
	}
	return s
}

// Recv returns the next chunk that carries something (content, reasoning,
// a tool call, a finish reason or usage); role-only and keep-alive events
// are skipped. See Stream.Recv for the end-of-stream contract.
//
// The API key is removed from the text here, before anyone sees it (see
// scrubber). A delta that is all a possible start of the key is not
// returned on its own: Recv goes on to the next one, which decides.
func (s *stream) Recv() (Chunk, error) {
	for {
		c, err := s.join.next()
		if err != nil {
			// What the scrubber held, if any, goes out first; the next
			// call returns err, which is kept in s.err.
			rest := s.scrub.end(err)
			s.echo.trim(&rest)
			if rest.HasDelta() {
				return rest, nil
			}
			return Chunk{}, err
		}
		s.scrub.chunk(&c)
		s.echo.trim(&c)
		if carries(&c) {
			return c, nil
		}
	}
}

// read is the joiner's chunkSource: the next event that carries something,
// as the provider sent it. Unless wait, it reads only while an event is
// ready, and reports false when it would have to wait.
func (s *stream) read(wait bool) (Chunk, bool, error) {
	for s.err == nil {
		err := s.failed
		if err == nil {
			c, ok, eerr := s.event(wait)
			if !ok {
				return Chunk{}, false, nil
			}
			if eerr == nil && carries(&c) {
				return c, true, nil
			}
			err = eerr
		}
		if err != nil {
			if rest, ok := s.failWith(err); ok {
				return rest, true, nil
			}
		}
	}
	return Chunk{}, true, s.err
}

// event reads the next event through stage 2, the response limits and the
// think stage. Unless wait, it reads only an event that is ready: ok is
// false when there is none.
func (s *stream) event(wait bool) (c Chunk, ok bool, err error) {
	raw, ok, err := s.events.next(wait)
	if !ok {
		return Chunk{}, false, nil
	}
	if err != nil {
		return Chunk{}, true, s.readError(err)
	}
	if c, err = s.decode(raw); err != nil {
		return Chunk{}, true, err
	}
	if err = s.account(c, len(raw)); err != nil {
		return Chunk{}, true, err
	}
	// The limits count what the provider sent; the think stage then
	// decides what of it is thought, and may hold the start of the
	// content back (or, on an event that carries nothing, release it:
	// nothing more is there).
	s.thoughts(&c)
	return c, true, nil
}

// failWith ends the stream with err. What the thinker held came before the
// failure: it goes first, as the chunks before it did (ok), and err comes
// at the next read.
func (s *stream) failWith(err error) (rest Chunk, ok bool) {
	if s.think.end(&rest); rest.HasDelta() {
		s.failed = err
		return rest, true
	}
	s.fail(err)
	return Chunk{}, false
}

// carries reports whether c carries something for the caller: a delta, a
// finish reason or usage.
func carries(c *Chunk) bool {
	return c.HasDelta() || c.FinishReason != "" || c.Usage != nil
}

// thoughts is the think stage (think.go) for one chunk: at the finish, or
// when the attempt is about to fail, what it held is released with it.
func (s *stream) thoughts(c *Chunk) {
	s.think.split(c, s.events.ready)
	if c.FinishReason != "" || s.failed != nil {
		s.think.end(c)
	}
}

// decode is stage 2 for this stream: it makes the provider's error of an
// error event, scrubs every error, and notes the finish: a finish reason
// that is no end (FinishFailed, or one Rebound does not know) fails the
// attempt once the deltas that came with it are returned.
func (s *stream) decode(raw []byte) (Chunk, error) {
	d, err := decodeChunk(raw, s.o.redact)
	if err != nil && s.events.errorEvent() {
		// An event named "error" whose data is not JSON: its text is the
		// provider's message.
		return Chunk{}, s.o.scrub(s.streamError(raw, nil))
	}
	switch {
	case err != nil && s.finished:
		// After the finish only usage is due, and usage is advisory: an
		// event too broken to read is dropped, not the reply. It still
		// counts as bytes without progress.
		s.o.warnDropped(s.cap.requestID(), err)
		return Chunk{}, nil
	case err != nil:
		return Chunk{}, s.o.scrub(err)
	case d.providerError, s.events.errorEvent():
		return Chunk{}, s.o.scrub(s.streamError(raw, nil))
	}
	if len(d.dropped) > 0 {
		s.o.warnUsage(s.cap.requestID(), d.dropped)
	}
	c := d.Chunk
	if c.FinishReason != "" {
		switch ClassifyFinish(c.FinishReason) {
		case FinishFailed, FinishUnknown:
			// The deltas (and what the thinker held) go out, then the
			// attempt fails.
			s.failed, c.FinishReason = s.finishError(c.FinishReason), ""
		default:
			s.finished = true
		}
	}
	return c, nil
}

// account applies the response limits to one decoded event of n bytes: a
// delta is progress and counts towards the reply cap; anything else counts
// as bytes without progress, with the lines the tap dropped.
func (s *stream) account(c Chunk, n int) error {
	b := &s.cap.tap.budget
	if !c.HasDelta() {
		// n is the payload; "data: " and the newline came with it.
		if le := b.noProgress(int64(n + len("data: \n"))); le != nil {
			return s.limitError(le)
		}
		return nil
	}
	s.replied += int64(deltaSize(c))
	if s.replied > s.o.limits.reply {
		return s.limitError(&LimitError{Kind: LimitReply, Limit: s.o.limits.reply})
	}
	b.progress()
	return nil
}

func (s *stream) limitError(le *LimitError) error {
	return &RequestIDError{RequestID: s.o.redact.str(s.cap.requestID()), Err: le}
}

// fail records the terminal result and releases the request: every path out
// of Recv that ends the stream closes the body, even if the caller never
// calls Close.
func (s *stream) fail(err error) {
	s.err = err
	s.release(err)
}

func (s *stream) release(cause error) {
	s.closeOnce.Do(func() {
		s.cancel(cause)
		s.events.st.Close()
	})
}

// Close aborts the request: it cancels the attempt's context and closes the
// body, so a Recv blocked in a read returns promptly with ErrStreamClosed.
func (s *stream) Close() error {
	s.closed.Store(true)
	s.release(ErrStreamClosed)
	return nil
}

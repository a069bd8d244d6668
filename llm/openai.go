package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	openai "github.com/sashabaranov/go-openai"
)

// OpenAIConfig configures the adapter for one OpenAI-compatible provider.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1"; the adapter
	// appends "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token and never appears in errors.
	APIKey string
	// HTTPClient sends the requests. Nil means an *http.Client without an
	// overall timeout: a streamed reply may legitimately run for minutes, and
	// the recovery watchdogs bound it instead.
	HTTPClient HTTPDoer
	// MaxBytesWithoutProgress bounds what one response may send without a
	// content, reasoning or tool-call delta (keep-alive comments, event
	// lines, empty or role-only chunks); past it the attempt fails with a
	// *LimitError. 0 means DefaultMaxBytesWithoutProgress.
	MaxBytesWithoutProgress int64
	// MaxReplyBytes bounds one reply: its content, reasoning and tool calls
	// together, and any single SSE line; past it the attempt fails with a
	// *LimitError. 0 means DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// Continuation says whether a cut-off reply is continued in place
	// (see PrefixDialects); "" is ContinueAuto.
	Continuation Continuation
	// StreamUsage says whether requests ask for the usage chunk
	// (stream_options.include_usage); "" is StreamUsageAuto.
	StreamUsage StreamUsage
	// Logger gets warnings about what a provider sent that was dropped
	// (unreadable usage); nil logs nothing.
	Logger *zerolog.Logger
}

// OpenAI is a Provider for OpenAI-compatible chat completion APIs, built on
// go-openai. Each Stream call is exactly one HTTP request: go-openai does not
// retry and neither does this adapter; package recovery decides.
type OpenAI struct {
	client *openai.Client
	redact redactor
	limits limits
	noJoin bool   // a benchmark's baseline: every event a chunk of its own
	host   string // the base URL's, for messages
	// prefix is how the provider continues a reply in place; nil: it is
	// asked with a prompt.
	prefix *PrefixDialect
	usage  bool // requests ask for the usage chunk
	logger *zerolog.Logger
	// windows are the context windows the last model list gave, by id.
	windows atomic.Pointer[map[string]uint64]
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns a provider for cfg. It does no I/O.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	doer := cfg.HTTPClient
	if doer == nil {
		doer = &http.Client{}
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	oc.HTTPClient = captureDoer{next: doer}
	// go-openai fails a read after this many consecutive non-data lines.
	// Some providers send a keep-alive comment every few seconds while a
	// reasoning model thinks; the tap's byte limit (MaxBytesWithoutProgress)
	// and the watchdogs bound that, not a line count.
	oc.EmptyMessagesLimit = math.MaxUint
	lim := limits{idle: cfg.MaxBytesWithoutProgress, reply: cfg.MaxReplyBytes}.withDefaults()
	return &OpenAI{client: openai.NewClientWithConfig(oc), redact: newRedactor(cfg.APIKey), limits: lim, host: baseHost(oc.BaseURL),
		prefix: prefixDialect(oc.BaseURL, cfg.Continuation), usage: includeUsage(oc.BaseURL, cfg.StreamUsage), logger: cfg.Logger}
}

// Stream starts one attempt. A non-2xx answer is returned here as an
// *Error; transport failures keep their identity (context.Canceled,
// *net.OpError, syscall.ECONNREFUSED, …) under a wrapping message.
func (o *OpenAI) Stream(ctx context.Context, req Request) (Stream, error) {
	creq := o.chatRequest(req)
	actx, cancel := context.WithCancelCause(ctx)
	actx, c := withCapture(actx, o.limits)
	var trim *echo
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Prefix {
		c.prefix = true
		if d := o.prefix; d == nil || d.Echoes || d.MayEcho {
			trim = &echo{prefix: req.Messages[n-1].Content, sure: d != nil && d.Echoes}
		}
	}
	st, err := o.client.CreateChatCompletionStream(actx, creq)
	if err != nil {
		if c.resp != nil {
			c.resp.Body.Close() // go-openai leaves a failed response's body open
		}
		cancel(err)
		return nil, o.scrub(o.requestError(ctx, c, err))
	}
	return &stream{o: o, parent: ctx, cancel: cancel, st: st, cap: c, scrub: scrubber{r: o.redact}, echo: trim}, nil
}

// chatRequest maps a Request to go-openai's. Reasoning is not sent back:
// DeepSeek rejects reasoning_content in requests and others ignore it.
func (o *OpenAI) chatRequest(req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		cm := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		if len(m.Images) > 0 {
			// Content and MultiContent are exclusive in go-openai.
			cm.Content = ""
			cm.MultiContent = []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: m.Content}}
			for _, img := range m.Images {
				cm.MultiContent = append(cm.MultiContent, openai.ChatMessagePart{
					Type:     openai.ChatMessagePartTypeImageURL,
					ImageURL: &openai.ChatMessageImageURL{URL: "data:" + img.MimeType + ";base64," + img.Data},
				})
			}
		}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, openai.ToolCall{
				ID:       tc.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		msgs = append(msgs, cm)
	}
	creq := openai.ChatCompletionRequest{
		Model:    req.Model,
		Messages: msgs,
		Stream:   true,
		// max_tokens is what OpenAI-compatible servers (vLLM, Ollama,
		// DeepSeek, OpenRouter, llama.cpp, …) accept most widely.
		MaxTokens:       req.MaxTokens,
		ReasoningEffort: req.ReasoningEffort,
	}
	if o.usage {
		creq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		creq.Tools = append(creq.Tools, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	// go-openai refuses max_tokens locally for OpenAI's reasoning models
	// (o1/o3/o4, gpt-5, …); those take max_completion_tokens.
	if errors.Is(openai.NewReasoningValidator().Validate(creq), openai.ErrReasoningModelMaxTokensDeprecated) {
		creq.MaxCompletionTokens, creq.MaxTokens = creq.MaxTokens, 0
	}
	return creq
}

// requestError turns a failed CreateChatCompletionStream into our error.
func (o *OpenAI) requestError(ctx context.Context, c *capture, err error) error {
	if c.status != 0 && (c.status < 200 || c.status >= 400) {
		e := &Error{
			Status:    c.status,
			Header:    c.header,
			Body:      c.body,
			RequestID: c.requestID(),
			Err:       err,
		}
		if f, ok := parseErrorFacts(c.body); ok {
			e.Code, e.Type, e.Param, e.Message = f.Code, f.Type, f.Param, f.Message
			e.RequestID = cmp.Or(e.RequestID, f.RequestID)
		} else if page, ok := o.pageMessage(c.status, c.header, c.body); ok {
			e.Message = page
		} else if s := o.snippet(c.body); s != "" {
			e.Message = s
		} else {
			e.Message = http.StatusText(c.status)
		}
		return e
	}
	return withCause(ctx, fmt.Errorf("chat completion request: %w", err))
}

// withCause makes sure an error that happened because ctx ended says so for
// errors.Is, whatever the transport turned the cancellation into.
func withCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w: %w", cause, err)
}

// scrub keeps the API key out of every provider-derived string a failure
// carries, whatever the provider echoed back and wherever: the message, the
// error code, type and param, the request id, the raw body, the headers kept
// (Retry-After, …), and go-openai's own error, which quotes the body.
// Provider errors are rewritten in place through their whole chain; any other
// error keeps its chain for errors.Is/As and only its text is redacted, since
// the key travels in a header and transport errors do not quote headers
// (text this adapter quotes from a body, a snippet, is redacted where it is
// made).
func (o *OpenAI) scrub(err error) error {
	r := o.redact
	if err == nil || r == "" {
		return err
	}
	if e, ok := errors.AsType[*Error](err); ok {
		e.Message, e.Code, e.Type, e.Param = r.str(e.Message), r.str(e.Code), r.str(e.Type), r.str(e.Param)
		e.RequestID = r.str(e.RequestID)
		e.Body = r.capped(e.Body)
		e.Header = r.header(e.Header)
		e.Err = o.redactErr(e.Err)
	}
	if e, ok := errors.AsType[*RequestIDError](err); ok {
		e.RequestID = r.str(e.RequestID)
	}
	if msg := err.Error(); r.in(msg) {
		return &redacted{msg: r.str(msg), err: err}
	}
	return err
}

// redactErr returns err with the key removed from its text and from the
// fields of the go-openai types that carry provider facts.
func (o *OpenAI) redactErr(err error) error {
	r := o.redact
	if err == nil || r == "" {
		return err
	}
	if ae, ok := errors.AsType[*openai.APIError](err); ok {
		c := *ae
		c.Message, c.Type, c.HTTPStatus = r.str(c.Message), r.str(c.Type), r.str(c.HTTPStatus)
		if s, ok := c.Code.(string); ok {
			c.Code = r.str(s)
		}
		if c.Param != nil {
			c.Param = ptrTo(r.str(*c.Param))
		}
		if c.InnerError != nil {
			inner := *c.InnerError
			inner.Code = r.str(inner.Code)
			c.InnerError = &inner
		}
		if r.in(c.Error()) {
			return &redacted{msg: r.str(err.Error())}
		}
		return &c
	}
	if re, ok := errors.AsType[*openai.RequestError](err); ok {
		c := *re
		c.HTTPStatus = r.str(c.HTTPStatus)
		c.Body = r.capped(c.Body)
		c.Err = o.redactErr(c.Err)
		if r.in(c.Error()) {
			return &redacted{msg: r.str(err.Error())}
		}
		return &c
	}
	if !r.in(err.Error()) {
		return err
	}
	return &redacted{msg: r.str(err.Error())}
}

// snippet is snippet(b) with the key removed before it is cut short, so a
// cut cannot leave part of the key.
func (o *OpenAI) snippet(b []byte) string { return snippet(o.redact.bytes(b)) }

func ptrTo[T any](v T) *T { return &v }

// redacted is an error whose text had the key removed; err, when set, keeps
// the original's identity.
type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// stream is one attempt's response body as go-openai reads it.
type stream struct {
	o      *OpenAI
	parent context.Context
	cancel context.CancelCauseFunc
	st     *openai.ChatCompletionStream
	cap    *capture
	scrub  scrubber
	echo   *echo // drops a repeat of the continued prefix; nil if none comes

	closed    atomic.Bool // Close was called
	closeOnce sync.Once

	// Only Recv touches these; Recv is not called concurrently.
	finished   bool  // a chunk carried a finish_reason
	err        error // sticky terminal result (io.EOF or a failure)
	pendingErr error // a read error seen while returning an intercepted chunk
	replied    int64 // bytes of content, reasoning and tool calls so far
	took       int64 // events go-openai returned, to compare with the tap's count
	peeked     bool  // peek holds the next event, read while joining
	peek       Chunk
	buf        []byte // text being joined, reused
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
		c, err := s.piece()
		if err != nil && s.scrub.holding() {
			// The next call returns err, which is kept in s.err.
			var rest Chunk
			if errors.Is(err, io.EOF) {
				s.scrub.flush(&rest) // text after the finish: it ended, so it is not the key
			} else {
				// Cut short: what may be the key, cut, is never sent. It was
				// not shown either, so live mode continues without it.
				s.scrub.cut(&rest)
			}
			if s.echo != nil {
				rest.Content = s.echo.feed(rest.Content)
			}
			if rest.HasDelta() {
				return rest, nil
			}
		}
		if err != nil {
			return Chunk{}, err
		}
		s.scrub.chunk(&c)
		if s.echo != nil {
			c.Content = s.echo.feed(c.Content)
			if c.FinishReason != "" {
				c.Content += s.echo.end()
			}
		}
		if c.HasDelta() || c.FinishReason != "" || c.Usage != nil {
			return c, nil
		}
	}
}

// maxPiece bounds the text of the deltas piece joins.
const maxPiece = 32 << 10

// Kinds of delta a chunk carries; deltas of one kind are joined.
const (
	kindContent = 1 << iota
	kindReasoning
	kindTools
)

func kindOf(c Chunk) int {
	k := 0
	if c.Content != "" {
		k |= kindContent
	}
	if c.Reasoning != "" {
		k |= kindReasoning
	}
	if len(c.ToolCalls) > 0 {
		k |= kindTools
	}
	return k
}

// piece returns the next event joined with the deltas of the same kind that
// arrived with it, up to maxPiece bytes: one chunk, so one record and one
// update, for a burst of tiny deltas. It joins only events already read
// from the network (ready): a delta that arrives alone is returned at once.
// A finish reason or usage after the deltas is joined too, and ends the
// piece.
func (s *stream) piece() (Chunk, error) {
	c, err := s.take()
	kind := kindOf(c)
	if err != nil || s.o.noJoin || c.FinishReason != "" || c.Usage != nil || (kind != kindContent && kind != kindReasoning && kind != kindTools) {
		return c, err
	}
	joined := false
	var args []byte // of the last tool call delta
	size := deltaSize(c)
	for size < maxPiece {
		if !s.peeked {
			n, ok, err := s.read(false)
			if !ok || err != nil {
				break // an error is kept in s.err for the next call
			}
			s.peek, s.peeked = n, true
		}
		n := s.peek
		if k := kindOf(n); k != 0 && k != kind {
			break
		}
		s.peeked = false
		if !joined {
			joined = true
			switch kind {
			case kindContent:
				s.buf = append(s.buf[:0], c.Content...)
			case kindReasoning:
				s.buf = append(s.buf[:0], c.Reasoning...)
			case kindTools:
				args = append(s.buf[:0], c.ToolCalls[len(c.ToolCalls)-1].Arguments...)
			}
		}
		switch kind {
		case kindContent:
			s.buf = append(s.buf, n.Content...)
		case kindReasoning:
			s.buf = append(s.buf, n.Reasoning...)
		case kindTools:
			for _, d := range n.ToolCalls {
				last := &c.ToolCalls[len(c.ToolCalls)-1]
				// Only more arguments for the same slot: a fragment with an id
				// or a name may start a new call (see Reply.Add).
				if d.ID == "" && d.Name == "" && d.Index == last.Index && d.Unindexed == last.Unindexed {
					args = append(args, d.Arguments...)
					continue
				}
				last.Arguments = string(args)
				args = append(args[:0], d.Arguments...)
				c.ToolCalls = append(c.ToolCalls, d)
			}
		}
		size += deltaSize(n)
		c.FinishReason, c.Usage = n.FinishReason, n.Usage
		if c.FinishReason != "" || c.Usage != nil {
			break
		}
	}
	if joined {
		switch kind {
		case kindContent:
			c.Content = string(s.buf)
		case kindReasoning:
			c.Reasoning = string(s.buf)
		case kindTools:
			c.ToolCalls[len(c.ToolCalls)-1].Arguments = string(args)
			s.buf = args[:0]
		}
	}
	return c, nil
}

func deltaSize(c Chunk) int {
	n := len(c.Content) + len(c.Reasoning)
	for _, d := range c.ToolCalls {
		n += len(d.ID) + len(d.Name) + len(d.Arguments)
	}
	return n
}

// take returns the event piece read ahead, or the next one.
func (s *stream) take() (Chunk, error) {
	if s.peeked {
		s.peeked = false
		return s.peek, nil
	}
	return s.next()
}

// ready reports whether the next event can be read without waiting: its
// line is in go-openai's buffer or in the tap's.
func (s *stream) ready() bool {
	t := s.cap.tap
	if t == nil || s.err != nil {
		return false
	}
	if t.events > s.took {
		return true
	}
	t.ahead()
	return t.events > s.took
}

// next returns the next event that carries something, as the provider sent
// it.
func (s *stream) next() (Chunk, error) {
	c, _, err := s.read(true)
	return c, err
}

// read is next; unless wait, it reads only while an event is ready, and
// reports false when it would have to wait.
func (s *stream) read(wait bool) (Chunk, bool, error) {
	for s.err == nil {
		if !wait && s.pendingErr == nil && !s.ready() {
			return Chunk{}, false, nil
		}
		var raw []byte
		var err error
		if s.pendingErr != nil {
			err, s.pendingErr = s.pendingErr, nil
		} else {
			raw, err = s.st.RecvRaw()
			if len(raw) > 0 {
				s.took++
			}
			if len(raw) == 0 {
				// go-openai swallowed a `data: {"error":` line and reports it
				// as an error (or as nothing): decode the tap's verbatim copy
				// instead. go-openai's own "error, …" for that line is
				// superseded; a real read error is kept for the next round.
				if p, ok := s.cap.tap.popIntercepted(); ok {
					if err != nil && !isGoOpenAIEventErr(err) {
						s.pendingErr = err
					}
					raw, err = p, nil
				}
			}
		}
		if err != nil {
			s.fail(s.readError(err))
			break
		}
		if len(raw) == 0 {
			continue
		}
		c, ok, err := s.decode(raw)
		if err != nil && s.finished && errors.Is(err, ErrMalformedStream) {
			// After the finish only usage is due, and usage is advisory:
			// an event too broken to read is dropped, not the reply. It
			// still counts as bytes without progress.
			s.o.warnDropped(s.cap.requestID(), err)
			c, ok, err = Chunk{}, false, nil
		}
		if err == nil {
			err = s.account(c, len(raw))
		}
		if err != nil {
			s.fail(err)
			break
		}
		if ok {
			return c, true, nil
		}
	}
	return Chunk{}, true, s.err
}

// account applies the response limits to one decoded event of n bytes: a
// delta is progress and counts towards the reply cap; anything else counts
// as bytes without progress, with the lines the tap dropped.
func (s *stream) account(c Chunk, n int) error {
	tap := s.cap.tap
	if !c.HasDelta() {
		// n is the payload; "data: " and the newline came with it.
		if le := tap.noProgress(int64(n + len("data: \n"))); le != nil {
			return s.limitError(le)
		}
		return nil
	}
	size := len(c.Content) + len(c.Reasoning)
	for _, d := range c.ToolCalls {
		size += len(d.ID) + len(d.Name) + len(d.Arguments)
	}
	s.replied += int64(size)
	if s.replied > s.o.limits.reply {
		return s.limitError(&LimitError{Kind: LimitReply, Limit: s.o.limits.reply})
	}
	tap.progress()
	return nil
}

func (s *stream) limitError(le *LimitError) error {
	return &RequestIDError{RequestID: s.o.redact.str(s.cap.requestID()), Err: le}
}

// isGoOpenAIEventErr reports go-openai's wrapping of an in-stream error
// event ("error, %w" around *openai.APIError).
func isGoOpenAIEventErr(err error) bool {
	_, ok := errors.AsType[*openai.APIError](err)
	return ok
}

// wireChunk is the subset of chat.completion.chunk we read, plus the error
// shapes some providers send as ordinary data events.
type wireChunk struct {
	Choices []struct {
		Delta struct {
			// Content is a string, or Mistral's typed parts (see contentParts).
			Content          json.RawMessage `json:"content"`
			ReasoningContent string          `json:"reasoning_content"` // DeepSeek, vLLM
			Reasoning        string          `json:"reasoning"`         // OpenRouter, Ollama
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	// Usage and x_groq (Groq's usage) are advisory: read apart, leniently
	// (usagewire.go), so no shape of them fails the chunk.
	Usage json.RawMessage `json:"usage"`
	XGroq json.RawMessage `json:"x_groq"`
	Error json.RawMessage `json:"error"`
	// Type is read only to recognise an error event; any other value, of
	// any JSON type, is no error and no reason to fail.
	Type json.RawMessage `json:"type"`
}

func (s *stream) decode(raw []byte) (Chunk, bool, error) {
	var w wireChunk
	if err := json.Unmarshal(raw, &w); err != nil {
		return Chunk{}, false, s.o.scrub(fmt.Errorf("%w: undecodable chunk %q: %w", ErrMalformedStream, s.o.snippet(raw), err))
	}
	if (len(w.Error) > 0 && string(w.Error) != "null") || string(bytes.TrimSpace(w.Type)) == `"error"` {
		return Chunk{}, false, s.o.scrub(s.streamError(raw, nil))
	}
	var c Chunk
	if len(w.Choices) > 0 {
		ch := w.Choices[0]
		text, thought, err := contentParts(ch.Delta.Content)
		if err != nil {
			return Chunk{}, false, s.o.scrub(fmt.Errorf("%w: undecodable chunk %q: %w", ErrMalformedStream, s.o.snippet(raw), err))
		}
		c.Content = text
		c.Reasoning = cmp.Or(ch.Delta.ReasoningContent, ch.Delta.Reasoning) + thought
		for i, tc := range ch.Delta.ToolCalls {
			d := ToolCallDelta{Index: i, Unindexed: true, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
			if tc.Index != nil {
				d.Index, d.Unindexed = *tc.Index, false
			}
			c.ToolCalls = append(c.ToolCalls, d)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			c.FinishReason = *ch.FinishReason
			s.finished = true
		}
	}
	ur := usageReader{redact: s.o.redact}
	c.Usage = ur.usage(w.Usage, w.XGroq)
	if len(ur.dropped) > 0 {
		s.o.warnUsage(s.cap.requestID(), ur.dropped)
	}
	return c, c.HasDelta() || c.FinishReason != "" || c.Usage != nil, nil
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
	if le := s.cap.tap.limited; le != nil {
		return s.limitError(le)
	}
	if s.parent.Err() != nil {
		return withCause(s.parent, fmt.Errorf("read stream: %w", err))
	}
	tap := s.cap.tap
	if (eof || isGoOpenAIEventErr(err)) && len(tap.junk) > 0 {
		// Not an event stream: a JSON error body sent with 2xx, or a page.
		if _, ok := parseErrorFacts(tap.junk); ok {
			return s.o.scrub(s.streamError(tap.junk, nil))
		}
		if page, ok := s.o.pageMessage(s.cap.status, s.cap.header, tap.junk); ok {
			return s.o.scrub(fmt.Errorf("%w: %s", ErrMalformedStream, page))
		}
		return s.o.scrub(fmt.Errorf("%w: response body is not an event stream: %s", ErrMalformedStream, s.o.snippet(tap.junk)))
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
	if tap.sawDone {
		why = "[DONE] arrived but no chunk carried a finish reason"
	}
	return &RequestIDError{RequestID: s.o.redact.str(s.cap.requestID()),
		Err: fmt.Errorf("%w: %s: %w", ErrIncompleteStream, why, io.ErrUnexpectedEOF)}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
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
		s.st.Close()
	})
}

// Close aborts the request: it cancels the attempt's context and closes the
// body, so a Recv blocked in a read returns promptly with ErrStreamClosed.
func (s *stream) Close() error {
	s.closed.Store(true)
	s.release(ErrStreamClosed)
	return nil
}

// warnDropped logs an event after the finish that could not be read and
// was dropped.
func (o *OpenAI) warnDropped(requestID string, err error) {
	if o.logger == nil {
		return
	}
	o.logger.Warn().Str("host", o.host).Str("requestId", o.redact.str(requestID)).Str("error", o.redact.str(err.Error())).
		Msg("an event after the reply's finish could not be read; it was dropped, the reply is kept")
}

// warnUsage logs the usage fields of a chunk that could not be read and
// were dropped. The reply goes on: usage is advisory.
func (o *OpenAI) warnUsage(requestID string, dropped []string) {
	if o.logger == nil {
		return
	}
	o.logger.Warn().Str("host", o.host).Str("requestId", o.redact.str(requestID)).Strs("dropped", dropped).
		Msg("the provider's usage had fields that could not be read; they were dropped, the reply is kept")
}

package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
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
	// bodies keeps the messages recent requests sent, encoded (body.go).
	bodies bodyCache
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

// ContinuesInPlace reports whether the provider continues a partial reply
// in place: a request whose last message has Prefix set.
func (o *OpenAI) ContinuesInPlace() bool { return o.prefix != nil }

// Endpoint is the host the provider's requests go to (its base URL's).
func (o *OpenAI) Endpoint() string { return o.host }

// baseHost is the host of the base URL, for messages.
func baseHost(baseURL string) string {
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		return u.Host
	}
	return baseURL
}

// Stream starts one attempt. A non-2xx answer is returned here as an
// *Error; transport failures keep their identity (context.Canceled,
// *net.OpError, syscall.ECONNREFUSED, …) under a wrapping message.
func (o *OpenAI) Stream(ctx context.Context, req Request) (Stream, error) {
	wire, err := o.bodies.encodeMessages(req)
	if err != nil {
		return nil, fmt.Errorf("chat completion request: %w", err)
	}
	creq := o.chatRequest(req)
	actx, cancel := context.WithCancelCause(ctx)
	actx, c := withCapture(actx, o.limits)
	c.wire = wire
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
	return newStream(o, ctx, cancel, st, c, trim), nil
}

// chatRequest maps a Request to go-openai's, without its messages: those
// are encoded a message at a time and spliced into go-openai's body by the
// transport (body.go).
func (o *OpenAI) chatRequest(req Request) openai.ChatCompletionRequest {
	creq := openai.ChatCompletionRequest{
		Model:    req.Model,
		Messages: []openai.ChatCompletionMessage{}, // spliced in: withMessages
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

// ListModels asks the provider's GET /models; models.go reads the list
// (its bounds, the ids kept, the context windows).
func (o *OpenAI) ListModels(ctx context.Context) ([]string, error) {
	ctx = context.WithValue(ctx, bodyLimitKey{}, int64(maxModelsBodySize))
	// go-openai's Model has no window: the body is read again for it.
	var body bytes.Buffer
	ctx = context.WithValue(ctx, teeKey{}, &body)
	list, err := o.client.ListModels(ctx)
	if err != nil {
		return nil, o.scrub(fmt.Errorf("list the provider's models: %w", err))
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		if ChatModel(m.ID) {
			ids = append(ids, m.ID)
		}
	}
	ids = CleanModelIDs(ids)
	windows := contextWindows(body.Bytes(), ids)
	o.windows.Store(&windows)
	return ids, nil
}

// ContextWindow is model's window as the last model list said.
func (o *OpenAI) ContextWindow(model string) uint64 {
	if w := o.windows.Load(); w != nil {
		return (*w)[model]
	}
	return 0
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

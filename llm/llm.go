// Package llm holds the provider-neutral request and stream types the agent
// talks in, the go-openai adapter that speaks them to any OpenAI-compatible
// provider, and (in mockprovider) the fault-injecting mock used by tests,
// `rebound demo` and `rebound mock-provider`. It knows nothing of ACP.
//
// The adapter reads a response in five stages, each in its own file and
// tested alone: SSE events (sse.go, events.go), chunk decoding (decode.go,
// with finish.go, streamerror.go and think.go), joining (join.go), the
// secret scrubber (redact.go) and continuation trimming (echo.go);
// stream.go joins them. A provider's dialect is read in the stage its
// framing or field belongs to.
//
// A request's body is written a message at a time (body.go): each
// message's encoding is kept from the request that first sent it, so the
// work before a request does not grow with the history.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation sent to the model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// Reasoning is kept for the record; adapters do not send it back to the
	// provider (DeepSeek rejects reasoning_content in requests).
	Reasoning  string     `json:"reasoning,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	// Images go with a user message's Content as image parts.
	Images []Image `json:"images,omitempty"`
	// Prefix marks the last message as a partial assistant reply for the
	// provider to continue in place. Set it only for a provider that
	// ContinuesInPlace; the stream then carries only what comes after it.
	Prefix bool `json:"prefix,omitempty"`
}

// Image is an inline image of a user message.
type Image struct {
	Name     string `json:"name"` // how the prompt named it, for placeholders
	MimeType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

// ToolCall is a complete tool call of a finished reply.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Request is one logical model request.
type Request struct {
	Model     string    `json:"model"`
	Messages  []Message `json:"messages"`
	MaxTokens int       `json:"maxTokens,omitempty"`
	// ReasoningEffort is sent as reasoning_effort when not empty.
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// Tools the model may call; empty means none are offered.
	Tools []ToolDef `json:"tools,omitempty"`
}

// ToolDef describes a function the model may call.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object; nil means an
	// object with no declared properties.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ToolCallDelta is a streamed fragment of a tool call. Fragments with the
// same Index belong to one call, until one brings a different id or name
// (see Reply.Add).
type ToolCallDelta struct {
	Index int `json:"index"`
	// Unindexed: the provider sent no index (Gemini). The fragment goes on
	// with the latest call unless it starts a new one.
	Unindexed bool   `json:"unindexed,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Usage is what the provider reported for one request. CachedTokens is the
// part of PromptTokens served from the provider's prompt cache (OpenAI
// prompt_tokens_details.cached_tokens, DeepSeek prompt_cache_hit_tokens);
// Cost is a figure the provider itself billed (OpenRouter usage.cost), never
// one we computed.
type Usage struct {
	PromptTokens     int      `json:"promptTokens"`
	CompletionTokens int      `json:"completionTokens"`
	CachedTokens     int      `json:"cachedTokens,omitempty"`
	Cost             *float64 `json:"cost,omitempty"`
}

// Chunk is one streamed delta of a reply, or several of one kind that
// arrived together (the OpenAI adapter joins them, so a burst of tiny
// deltas costs one chunk downstream, not one each).
type Chunk struct {
	Content      string          `json:"content,omitempty"`
	Reasoning    string          `json:"reasoning,omitempty"`
	ToolCalls    []ToolCallDelta `json:"toolCalls,omitempty"`
	FinishReason string          `json:"finishReason,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
}

// HasDelta reports whether the chunk carries model output (content, reasoning
// or a tool call), as opposed to a role-only or usage-only chunk.
func (c Chunk) HasDelta() bool {
	return c.Content != "" || c.Reasoning != "" || len(c.ToolCalls) > 0
}

// Finish reasons as the OpenAI API reports them.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
	FinishToolCalls     = "tool_calls"
)

// Stream is one in-flight attempt: one HTTP request.
type Stream interface {
	// Recv returns the next chunk, without waiting for more once it has
	// one. It returns io.EOF only after a chunk with a finish reason was
	// seen; a body that ends before that is an error wrapping
	// ErrIncompleteStream.
	Recv() (Chunk, error)
	// Close aborts the HTTP request if it is still running.
	Close() error
}

// Provider starts attempts. Implementations do not retry, and keep nothing
// of req once Stream returns: the caller reuses its slices for the next
// request (copy what you record).
type Provider interface {
	Stream(ctx context.Context, req Request) (Stream, error)
}

// ErrIncompleteStream: the response body ended without a finish reason or
// [DONE] (a dropped connection that go-openai reports as a plain EOF).
var ErrIncompleteStream = errors.New("stream ended before the reply finished")

// ErrStreamClosed is what Recv returns after Close aborted the attempt. It
// deliberately does not wrap context.Canceled: the caller closed the stream
// (a watchdog, usually), which is not the user cancelling the turn.
var ErrStreamClosed = errors.New("stream closed")

// ErrMalformedStream: the provider answered 2xx but the body is not an
// OpenAI-style event stream (undecodable chunk, not SSE at all).
var ErrMalformedStream = errors.New("malformed stream")

// Error carries the structured facts of a provider failure: the HTTP status
// and headers captured by the transport, and the provider's error object
// (flat or nested one level) when it sent one. Classification (package
// recovery) reads these fields, never Message.
type Error struct {
	Status    int         // HTTP status; 0 when the failure had none (in-stream error, transport)
	Code      string      // error.code, as a string
	Type      string      // error.type
	Param     string      // error.param
	Message   string      // error.message, for people
	RequestID string      // x-request-id / request-id
	Header    http.Header // response headers (Retry-After, retry-after-ms, …)
	Body      []byte      // raw error body, capped
	InStream  bool        // sent as a data: {"error":…} event after a 200
	Err       error       // underlying error, if any
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.Status != 0 && e.InStream:
		return fmt.Sprintf("provider error in stream (HTTP %d): %s", e.Status, msg)
	case e.Status != 0:
		return fmt.Sprintf("provider returned HTTP %d: %s", e.Status, msg)
	case e.InStream:
		return fmt.Sprintf("provider error in stream: %s", msg)
	}
	return "provider error: " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// RequestIDError (not to be confused with acp.RequestError, a JSON-RPC
// request error) is a failure after the provider answered that carries no
// error object of its own (a dropped stream, say) but whose request the
// provider identified: the id is what a provider's support asks for.
type RequestIDError struct {
	RequestID string
	Err       error
}

func (e *RequestIDError) Error() string {
	if e.RequestID == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + " (request " + e.RequestID + ")"
}

func (e *RequestIDError) Unwrap() error { return e.Err }

// Reply accumulates the chunks of one attempt into a finished reply.
type Reply struct {
	Content      string
	Reasoning    string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        *Usage
	// Deltas counts chunks that carried model output.
	Deltas int

	// The text grows in builders, so a reply of n chunks costs O(n), not
	// O(n²) as += would; the exported strings are views of them.
	content, reasoning strings.Builder
	args               []*strings.Builder
	// slots maps a provider's tool call index to the position in ToolCalls
	// of the call that index last named.
	slots map[int]int
}

// MaxToolCalls bounds the tool calls of one reply, and a provider's index.
const MaxToolCalls = 128

// Add folds one chunk into the reply. A tool call index outside [0,
// MaxToolCalls), or more than MaxToolCalls calls, is a malformed stream.
//
// Tool calls are kept in the order they first appear, with no holes: an
// index is a key, not a position (Claude behind some gateways starts at 1).
// A fragment with a new id, or a new name for a call that has one, starts a
// new call, whatever its index says (Ollama repeats index 0; Gemini sends no
// index at all); see startsNew.
func (r *Reply) Add(c Chunk) error {
	for _, d := range c.ToolCalls {
		if !d.Unindexed && (d.Index < 0 || d.Index >= MaxToolCalls) {
			return fmt.Errorf("%w: tool call index %d is outside 0 to %d", ErrMalformedStream, d.Index, MaxToolCalls-1)
		}
	}
	if c.HasDelta() {
		r.Deltas++
	}
	if c.Content != "" {
		r.content.WriteString(c.Content)
		r.Content = r.content.String()
	}
	if c.Reasoning != "" {
		r.reasoning.WriteString(c.Reasoning)
		r.Reasoning = r.reasoning.String()
	}
	for _, d := range c.ToolCalls {
		if err := r.addCall(d); err != nil {
			return err
		}
	}
	if c.FinishReason != "" {
		r.FinishReason = c.FinishReason
	}
	if c.Usage != nil {
		r.Usage = c.Usage
	}
	return nil
}

func (r *Reply) addCall(d ToolCallDelta) error {
	if d.ID == "" && d.Name == "" && d.Arguments == "" {
		return nil // nothing to add: no call is made of it
	}
	pos, ok := r.callOf(d)
	if !ok {
		if len(r.ToolCalls) == MaxToolCalls {
			return fmt.Errorf("%w: more than %d tool calls", ErrMalformedStream, MaxToolCalls)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{})
		r.args = append(r.args, &strings.Builder{})
		pos = len(r.ToolCalls) - 1
	}
	if !d.Unindexed {
		if r.slots == nil {
			r.slots = map[int]int{}
		}
		r.slots[d.Index] = pos
	}
	tc := &r.ToolCalls[pos]
	if d.ID != "" {
		tc.ID = d.ID
	}
	if d.Name != "" {
		tc.Name = d.Name // a repeated name is the same name
	}
	if d.Arguments != "" {
		r.args[pos].WriteString(d.Arguments)
		tc.Arguments = r.args[pos].String()
	}
	return nil
}

// startsNew reports whether fragment d begins a call other than tc, the one
// its index (or, without one, its position in the stream) points at.
// callOf returns the position of the call fragment d goes on with, if it
// goes on with one rather than starting a new call.
func (r *Reply) callOf(d ToolCallDelta) (int, bool) {
	pos, ok := len(r.ToolCalls)-1, len(r.ToolCalls) > 0
	if !d.Unindexed {
		pos, ok = r.slots[d.Index]
	}
	if ok && startsNew(r.ToolCalls[pos], d) {
		ok = false
	}
	return pos, ok
}

func startsNew(tc ToolCall, d ToolCallDelta) bool {
	switch {
	case d.ID != "" && tc.ID != "":
		return d.ID != tc.ID
	case d.Name == "" || tc.Name == "":
		return false
	case d.Name != tc.Name:
		return true
	}
	// The same name again and no id to tell: a provider that repeats the
	// name on every fragment, or a second call to the same tool sent whole
	// (Gemini's parallel calls). The second is the one whose predecessor's
	// arguments are already a complete JSON value.
	return tc.Arguments != "" && json.Valid([]byte(tc.Arguments))
}

// Empty reports a finished reply with no content and no tool call.
func (r *Reply) Empty() bool {
	return r.Content == "" && len(r.ToolCalls) == 0
}

// Package mockprovider is a fault-injecting OpenAI-compatible chat
// completions server. A Script says, request by request, what to answer:
// a streamed reply, an HTTP error, a stream that drops, stalls or carries an
// error event. The same bytes are served in memory (Mock.Do, an HTTPDoer for
// go-openai, usable inside testing/synctest bubbles) and over real HTTP
// (Mock.ServeHTTP, Serve) for end-to-end tests, `rebound demo` and
// `rebound mock-provider`.
package mockprovider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Script is the mock's plan: each request consumes the next step.
type Script struct {
	// Steps answer requests in order, one step per request.
	Steps []Step `json:"steps"`
	// Fallback answers every request after Steps are used up. Without it,
	// such requests get HTTP 500 saying the script is exhausted.
	Fallback *Step `json:"fallback,omitempty"`
	// StrictAlternation makes the mock refuse, with HTTP 400 and without
	// consuming a step, a request whose messages a strict provider would
	// refuse: roles that do not alternate user/assistant after the system
	// messages, or a tool call without its tool message.
	StrictAlternation bool `json:"strict_alternation,omitempty"`
	// Models, when set, is the list GET /v1/models answers with. Without
	// it that request gets HTTP 404, as from a provider that has no list.
	// Model list requests consume no step and are not recorded.
	Models []string `json:"models,omitempty"`
	// ContextLengths gives models of the list a context_length, as
	// OpenRouter's list does (in tokens).
	ContextLengths map[string]int `json:"context_lengths,omitempty"`
	// Bucket, when set, puts a shared rate limit in front of the steps.
	Bucket *Bucket `json:"bucket,omitempty"`
}

// Bucket is a provider's rate limit shared by every client of the mock:
// at most Requests chat requests in each Window (fixed windows, the first
// starting at the first request). A request beyond is refused with 429 and
// consumes no step; it carries retry-after (whole seconds to the window's
// end, rounded up), retry-after-ms, x-ratelimit-limit-requests,
// x-ratelimit-remaining-requests (0) and x-ratelimit-reset-requests (a Go
// duration to the window's end). Requests within the limit get the same
// x-ratelimit-* headers with the count left.
type Bucket struct {
	Requests int `json:"requests"`
	// Window is a Go duration, e.g. "10s".
	Window string `json:"window"`
}

// Step is the answer to one request. The zero Step is an empty reply that
// finishes with "stop". Status (an HTTP error) excludes every streaming
// field; drop_after, stall_after and stream_error exclude each other.
type Step struct {
	// Text is the reply's content.
	Text string `json:"text,omitempty"`
	// Reasoning is sent as reasoning_content deltas before the text.
	Reasoning string `json:"reasoning,omitempty"`
	// Chunks splits Text (and Reasoning) into this many roughly equal
	// deltas; default 1. Text shorter than Chunks gives one delta per rune.
	Chunks int `json:"chunks,omitempty"`
	// FinishReason of the final chunk: "stop" (default), "length",
	// "content_filter" or "tool_calls" (default when ToolCalls is set).
	FinishReason string `json:"finish_reason,omitempty"`
	// ToolCalls are streamed after the text, one delta per call.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Echo makes the text "You said: " followed by the last user message.
	Echo bool `json:"echo,omitempty"`
	// Empty states the intent of a reply with no content at all; it
	// finishes with "stop" and excludes text, reasoning, tool calls, echo.
	Empty bool `json:"empty,omitempty"`

	// Status, when not 0 or 200, answers with that HTTP error (400-599)
	// instead of a stream.
	Status int `json:"status,omitempty"`
	// Body of the error reply. A JSON string is sent as raw text (to mimic
	// an HTML page from a proxy); any other JSON value is sent as JSON.
	// Default: an OpenAI-style {"error":{...}} suited to Status (Anthropic
	// style for 529).
	Body json.RawMessage `json:"body,omitempty"`
	// Headers are added to the response, e.g. {"Retry-After": "2"}.
	// X-Request-Id defaults to "mock-req-<n>" for the n-th request.
	Headers map[string]string `json:"headers,omitempty"`
	// Delay waits this long (a Go duration, "1.5s") before answering at
	// all: no status, no headers.
	Delay string `json:"delay,omitempty"`

	// DropAfter sends this many deltas (reasoning, content and tool-call
	// chunks, in the order sent), then ends the body cleanly with no
	// finish_reason and no [DONE], as a dropped connection looks to
	// go-openai.
	DropAfter *int `json:"drop_after,omitempty"`
	// StallAfter sends this many deltas, then sends nothing until the
	// client gives up (its request context ends).
	StallAfter *int `json:"stall_after,omitempty"`
	// StreamError is sent as `data: {"error": <value>}` after the deltas,
	// and the body ends there.
	StreamError json.RawMessage `json:"stream_error,omitempty"`
	// ChunkDelay waits this long (a Go duration, "100ms") before each event
	// after the first.
	ChunkDelay string `json:"chunk_delay,omitempty"`
}

// ToolCall is a complete tool call the mock streams in one delta.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments object.
	Arguments string `json:"arguments"`
}

// ParseScript decodes and validates a script. Unknown fields are errors, so
// a typo in a fault script cannot silently turn a fault into a success.
func ParseScript(data []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("mock script: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("mock script: unexpected data after the script object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mock script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Validate reports the first problem, naming the step and the field.
func (s *Script) Validate() error {
	if b := s.Bucket; b != nil {
		if b.Requests < 1 {
			return fmt.Errorf("mock script: bucket: requests: %d is not a positive count", b.Requests)
		}
		if d, err := time.ParseDuration(b.Window); err != nil || d <= 0 {
			return fmt.Errorf("mock script: bucket: window: %q is not a positive Go duration", b.Window)
		}
	}
	for i := range s.Steps {
		if err := s.Steps[i].validate(); err != nil {
			return fmt.Errorf("mock script: steps[%d]: %w", i, err)
		}
	}
	if s.Fallback != nil {
		if err := s.Fallback.validate(); err != nil {
			return fmt.Errorf("mock script: fallback: %w", err)
		}
	}
	return nil
}

var finishReasons = map[string]bool{"stop": true, "length": true, "content_filter": true, "tool_calls": true}

func (st *Step) validate() error {
	for _, check := range [...]func() error{st.checkNumbers, st.checkNames, st.checkErrorStatus, st.checkEnds, st.checkText} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkNumbers checks the fields that hold a count or a status on their own.
func (st *Step) checkNumbers() error {
	if st.Status != 0 && st.Status != 200 && (st.Status < 400 || st.Status > 599) {
		return fmt.Errorf("status: %d is not 200 or an error status (400-599)", st.Status)
	}
	if st.Chunks < 0 {
		return fmt.Errorf("chunks: %d is negative", st.Chunks)
	}
	if st.DropAfter != nil && *st.DropAfter < 0 {
		return fmt.Errorf("drop_after: %d is negative", *st.DropAfter)
	}
	if st.StallAfter != nil && *st.StallAfter < 0 {
		return fmt.Errorf("stall_after: %d is negative", *st.StallAfter)
	}
	return nil
}

// checkNames checks the fields that hold a name or a duration on their own.
func (st *Step) checkNames() error {
	if st.FinishReason != "" && !finishReasons[st.FinishReason] {
		return fmt.Errorf("finish_reason: %q is not one of stop, length, content_filter, tool_calls", st.FinishReason)
	}
	for _, f := range [...]struct{ name, v string }{{"delay", st.Delay}, {"chunk_delay", st.ChunkDelay}} {
		if f.v == "" {
			continue
		}
		if d, err := time.ParseDuration(f.v); err != nil || d < 0 {
			return fmt.Errorf("%s: %q is not a non-negative duration like \"100ms\"", f.name, f.v)
		}
	}
	for j, tc := range st.ToolCalls {
		if tc.Name == "" {
			return fmt.Errorf("tool_calls[%d].name: missing", j)
		}
	}
	return nil
}

// stepField is a field of a Step by its name in the script, and whether
// it is set.
type stepField struct {
	name string
	set  bool
}

// streaming is the fields that shape a stream, the text and reasoning first.
func (st *Step) streaming() []stepField {
	return []stepField{
		{"text", st.Text != ""},
		{"reasoning", st.Reasoning != ""},
		{"chunks", st.Chunks != 0},
		{"finish_reason", st.FinishReason != ""},
		{"tool_calls", len(st.ToolCalls) > 0},
		{"echo", st.Echo},
		{"empty", st.Empty},
		{"drop_after", st.DropAfter != nil},
		{"stall_after", st.StallAfter != nil},
		{"stream_error", len(st.StreamError) > 0},
		{"chunk_delay", st.ChunkDelay != ""},
	}
}

// checkErrorStatus checks that an error status has no stream, and that
// only it has a body.
func (st *Step) checkErrorStatus() error {
	if !st.isError() {
		if len(st.Body) > 0 {
			return errors.New("body: only an error status (400-599) has a body")
		}
		return nil
	}
	for _, f := range st.streaming() {
		if f.set {
			return fmt.Errorf("%s: cannot be combined with status %d (an HTTP error has no stream)", f.name, st.Status)
		}
	}
	return nil
}

// checkEnds checks that at most one field ends the stream early.
func (st *Step) checkEnds() error {
	ends := []stepField{
		{"drop_after", st.DropAfter != nil},
		{"stall_after", st.StallAfter != nil},
		{"stream_error", len(st.StreamError) > 0},
	}
	first := ""
	for _, e := range ends {
		if !e.set {
			continue
		}
		if first != "" {
			return fmt.Errorf("%s: cannot be combined with %s (each ends the stream its own way)", e.name, first)
		}
		first = e.name
	}
	return nil
}

// checkText checks that one field at most makes the reply's content:
// text, echo, or none (empty).
func (st *Step) checkText() error {
	if st.Echo && st.Text != "" {
		return errors.New("echo: cannot be combined with text (echo makes the text)")
	}
	if !st.Empty {
		return nil
	}
	for _, f := range st.streaming()[:2] {
		if f.set {
			return fmt.Errorf("%s: cannot be combined with empty", f.name)
		}
	}
	if len(st.ToolCalls) > 0 || st.Echo {
		return errors.New("empty: cannot be combined with tool_calls or echo")
	}
	return nil
}

func (st *Step) isError() bool { return st.Status != 0 && st.Status != 200 }

// duration parses a validated duration field; "" is 0.
func duration(s string) time.Duration {
	d, _ := time.ParseDuration(s)
	return d
}

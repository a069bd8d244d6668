package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
)

// Stage 2 of a stream, chunk decoding (see stream): one data event's
// payload to a Chunk, or to the provider's error, or to a malformed-stream
// error. It is where a field of another dialect is read: a content shape
// (contentParts), a reasoning field, a tool-call fragment (toolCallDeltas),
// a finish reason, an error object sent as data (isErrorEvent), usage
// (usagewire.go).
//
// It takes nothing from go-openai but the payload (RecvRaw, events.go):
// go-openai's ChatCompletionStreamResponse has no place for reasoning
// fields, Mistral's typed content parts, Groq's usage or an error object,
// and fails a whole chunk on a field of the wrong type.

// wireChunk is the subset of chat.completion.chunk we read, plus the error
// shapes some providers send as ordinary data events.
type wireChunk struct {
	Choices []struct {
		Delta struct {
			// Content is a string, or Mistral's typed parts (see contentParts).
			Content          json.RawMessage `json:"content"`
			ReasoningContent string          `json:"reasoning_content"` // DeepSeek, vLLM
			Reasoning        string          `json:"reasoning"`         // OpenRouter, Ollama
			ToolCalls        []wireToolCall  `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	// Usage and x_groq (Groq's usage) are advisory: read apart, leniently
	// (usagewire.go), so no shape of them fails the chunk.
	Usage json.RawMessage `json:"usage"`
	XGroq json.RawMessage `json:"x_groq"`
	Error json.RawMessage `json:"error"`
	// Type, Object, Message and Detail are read only to recognise an error
	// event; any other value, of any JSON type, is no error and no reason
	// to fail.
	Type    json.RawMessage `json:"type"`
	Object  isError         `json:"object"` // every chunk has one: read without a copy
	Message isText          `json:"message"`
	Detail  isText          `json:"detail"`
	// BaseResp is MiniMax's status, in every chunk: code 0, or the error.
	BaseResp failedBaseResp `json:"base_resp"`
}

// failedBaseResp records whether a MiniMax base_resp holds an error (a
// status_code other than 0), keeping nothing.
type failedBaseResp bool

func (f *failedBaseResp) UnmarshalJSON(b []byte) error {
	var br struct {
		StatusCode json.RawMessage `json:"status_code"`
	}
	if json.Unmarshal(b, &br) != nil {
		return nil // not MiniMax's shape: nothing to read, no reason to fail
	}
	c := jsonText(br.StatusCode)
	*f = failedBaseResp(c != "" && c != "0")
	return nil
}

// isError records whether a member is the string "error", keeping nothing.
type isError bool

func (e *isError) UnmarshalJSON(b []byte) error {
	*e = string(bytes.TrimSpace(b)) == `"error"`
	return nil
}

// isText records whether a member is a string that is not empty, keeping
// nothing.
type isText bool

func (t *isText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*t = len(b) > 2 && b[0] == '"'
	return nil
}

// wireToolCall is one tool-call fragment of a delta.
type wireToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a string of JSON text, as OpenAI sends it, or the
		// JSON value itself, as some servers send it (see toolArguments).
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// decoded is one event, decoded.
type decoded struct {
	Chunk
	// providerError: the payload is the provider's error object, not a
	// chunk; the stream makes the *Error of it.
	providerError bool
	// dropped are the usage fields that could not be read, for a warning.
	dropped []string
}

// decodeChunk decodes one data event's payload. An error is a malformed
// stream (it wraps ErrMalformedStream); its text quotes the payload with
// the key r removed, and may still need the caller's scrub for the rest.
func decodeChunk(raw []byte, r redactor) (decoded, error) {
	var w wireChunk
	if err := json.Unmarshal(raw, &w); err != nil {
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
			// Google's errors come in an array of one, in a stream too.
			if _, ok := parseErrorFacts(t); ok {
				return decoded{providerError: true}, nil
			}
		}
		return decoded{}, undecodable(raw, r, err)
	}
	if isErrorEvent(w) {
		return decoded{providerError: true}, nil
	}
	var d decoded
	if len(w.Choices) > 0 {
		ch := w.Choices[0]
		text, thought, err := contentParts(ch.Delta.Content)
		if err != nil {
			return decoded{}, undecodable(raw, r, err)
		}
		d.Content = text
		d.Reasoning = cmp.Or(ch.Delta.ReasoningContent, ch.Delta.Reasoning) + thought
		if d.ToolCalls, err = toolCallDeltas(ch.Delta.ToolCalls); err != nil {
			return decoded{}, undecodable(raw, r, err)
		}
		if ch.FinishReason != nil && !noFinish(*ch.FinishReason) {
			d.FinishReason = *ch.FinishReason
		}
	}
	ur := usageReader{redact: r}
	d.Usage = ur.usage(w.Usage, w.XGroq)
	d.dropped = ur.dropped
	return d, nil
}

func undecodable(raw []byte, r redactor, err error) error {
	return fmt.Errorf("%w: undecodable chunk %q: %w", ErrMalformedStream, snippet(r.bytes(raw)), err)
}

// isErrorEvent reports a payload that is the provider's error rather than a
// chunk: an "error" member that is not null; "type": "error" (Anthropic's
// shape, through gateways); "object": "error" (vLLM); or, with no choices,
// a message of its own ({"code":…,"message":…}, FastAPI's {"detail":…}),
// which no chunk has.
func isErrorEvent(w wireChunk) bool {
	switch {
	case len(w.Error) > 0 && string(w.Error) != "null", string(bytes.TrimSpace(w.Type)) == `"error"`, bool(w.Object), bool(w.BaseResp):
		return true
	case w.Choices != nil:
		return false
	}
	return bool(w.Message || w.Detail)
}

// toolCallDeltas maps a delta's tool-call fragments; a fragment without an
// index is Unindexed, at its position.
func toolCallDeltas(in []wireToolCall) ([]ToolCallDelta, error) {
	var out []ToolCallDelta
	for i, tc := range in {
		args, err := toolArguments(tc.Function.Arguments)
		if err != nil {
			return nil, err
		}
		d := ToolCallDelta{Index: i, Unindexed: true, ID: tc.ID, Name: tc.Function.Name, Arguments: args}
		if tc.Index != nil {
			d.Index, d.Unindexed = *tc.Index, false
		}
		out = append(out, d)
	}
	return out, nil
}

// toolArguments reads a fragment's arguments. OpenAI sends a string of JSON
// text, streamed in pieces to concatenate; some servers (Ollama's and
// llama.cpp's older builds, gateways converting from Gemini or Anthropic)
// send the arguments object itself, whole. An object or array becomes its
// compact JSON text, which is what the string would have held; null or
// nothing is no arguments (""): a call that never gets any is called with
// {} by whoever runs it. Any other value (a number, true) becomes its text
// as well: the tool's own validation says what is wrong with it, not a
// malformed stream.
func toolArguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("tool call arguments: %w", err)
		}
		return s, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", fmt.Errorf("tool call arguments: %w", err)
	}
	return b.String(), nil
}

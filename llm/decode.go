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
	// Type is read only to recognise an error event; any other value, of
	// any JSON type, is no error and no reason to fail.
	Type json.RawMessage `json:"type"`
}

// wireToolCall is one tool-call fragment of a delta.
type wireToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
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
		d.ToolCalls = toolCallDeltas(ch.Delta.ToolCalls)
		if ch.FinishReason != nil {
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
// chunk: an "error" member that is not null, or "type": "error".
func isErrorEvent(w wireChunk) bool {
	return (len(w.Error) > 0 && string(w.Error) != "null") || string(bytes.TrimSpace(w.Type)) == `"error"`
}

// toolCallDeltas maps a delta's tool-call fragments; a fragment without an
// index is Unindexed, at its position.
func toolCallDeltas(in []wireToolCall) []ToolCallDelta {
	var out []ToolCallDelta
	for i, tc := range in {
		d := ToolCallDelta{Index: i, Unindexed: true, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if tc.Index != nil {
			d.Index, d.Unindexed = *tc.Index, false
		}
		out = append(out, d)
	}
	return out
}

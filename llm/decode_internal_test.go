package llm

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Chunk decoding alone: each dialect's shape of a payload to a Chunk, an
// error object to the provider's error, anything else to a malformed
// stream that does not quote the key.
func TestDecodeChunk_Dialects(t *testing.T) {
	const key = "sk-decode-SECRET-42"
	tests := []struct {
		name, raw string
		want      decoded
		malformed bool
	}{
		{"content", `{"choices":[{"delta":{"content":"hi"}}]}`, decoded{Chunk: Chunk{Content: "hi"}}, false},
		{"role only", `{"choices":[{"delta":{"role":"assistant","content":null}}]}`, decoded{}, false},
		{"no choices", `{"id":"x","choices":[]}`, decoded{}, false},
		{"deepseek reasoning", `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, decoded{Chunk: Chunk{Reasoning: "hm"}}, false},
		{"openrouter reasoning", `{"choices":[{"delta":{"reasoning":"hm"}}]}`, decoded{Chunk: Chunk{Reasoning: "hm"}}, false},
		{"mistral parts", `{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"t"}]},{"type":"text","text":"x"}]}}]}`,
			decoded{Chunk: Chunk{Content: "x", Reasoning: "t"}}, false},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","function":{"name":"f","arguments":"{"}}]}}]}`,
			decoded{Chunk: Chunk{ToolCalls: []ToolCallDelta{{Index: 1, ID: "c", Name: "f", Arguments: "{"}}}}, false},
		{"gemini tool calls without index", `{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f"}},{"function":{"name":"g"}}]}}]}`,
			decoded{Chunk: Chunk{ToolCalls: []ToolCallDelta{{Index: 0, Unindexed: true, Name: "f"}, {Index: 1, Unindexed: true, Name: "g"}}}}, false},
		{"finish", `{"choices":[{"delta":{},"finish_reason":"length"}]}`, decoded{Chunk: Chunk{FinishReason: "length"}}, false},
		{"null finish", `{"choices":[{"delta":{},"finish_reason":null}]}`, decoded{}, false},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":"4"}}`, decoded{Chunk: Chunk{Usage: &Usage{PromptTokens: 3, CompletionTokens: 4}}}, false},
		{"groq usage", `{"choices":[],"x_groq":{"usage":{"prompt_tokens":3}}}`, decoded{Chunk: Chunk{Usage: &Usage{PromptTokens: 3}}}, false},
		{"unreadable usage dropped", `{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":-1}}`,
			decoded{Chunk: Chunk{Content: "a"}, dropped: []string{"usage.prompt_tokens: not a token count from 0 to 2^40 (-1)"}}, false},
		{"error object", `{"error":{"message":"busy","code":429}}`, decoded{providerError: true}, false},
		{"anthropic error", `{"type":"error","error":{"type":"overloaded_error"}}`, decoded{providerError: true}, false},
		{"type error only", `{"type":"error","message":"m"}`, decoded{providerError: true}, false},
		{"null error", `{"error":null,"choices":[{"delta":{"content":"a"}}]}`, decoded{Chunk: Chunk{Content: "a"}}, false},
		{"another type", `{"type":7,"choices":[{"delta":{"content":"a"}}]}`, decoded{Chunk: Chunk{Content: "a"}}, false},
		{"not json", `{"choices":` + key, decoded{}, true},
		{"content of another type", `{"choices":[{"delta":{"content":{"k":"` + key + `"}}}]}`, decoded{}, true},
		{"arguments as an object", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{ "a" : [1, 2] }}}]}}]}`,
			decoded{Chunk: Chunk{ToolCalls: []ToolCallDelta{{Index: 0, Arguments: `{"a":[1,2]}`}}}}, false},
		{"arguments as an array", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":[1]}}]}}]}`,
			decoded{Chunk: Chunk{ToolCalls: []ToolCallDelta{{Index: 0, Arguments: `[1]`}}}}, false},
		{"arguments null", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":null}}]}}]}`,
			decoded{Chunk: Chunk{ToolCalls: []ToolCallDelta{{Index: 0, ID: "c", Name: "f"}}}}, false},
		{"vllm error object", `{"object":"error","message":"bad","type":"BadRequestError","code":400}`, decoded{providerError: true}, false},
		{"vllm error object without a message", `{"object":"error","type":"InternalServerError","code":503}`, decoded{providerError: true}, false},
		{"flat error", `{"code":"1301","message":"m"}`, decoded{providerError: true}, false},
		{"fastapi detail", `{"detail":"d"}`, decoded{providerError: true}, false},
		{"a message with choices is a chunk", `{"message":"m","choices":[{"delta":{"content":"a"}}]}`, decoded{Chunk: Chunk{Content: "a"}}, false},
		{"a message object is no error", `{"message":{"role":"assistant"}}`, decoded{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeChunk([]byte(tt.raw), newRedactor(key))
			if tt.malformed {
				if !errors.Is(err, ErrMalformedStream) || strings.Contains(err.Error(), key) {
					t.Fatalf("err = %v, want a malformed stream without the key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(decoded{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

package llm_test

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/llm"
)

// The final usage chunk of each provider family, in our own words after the
// shapes their API references document: OpenAI (chat streaming with
// stream_options.include_usage: empty choices, usage with
// prompt_tokens_details.cached_tokens), DeepSeek (prompt_cache_hit_tokens /
// prompt_cache_miss_tokens) and OpenRouter (usage.cost in credits).
func TestOpenAI_UsageShapes(t *testing.T) {
	const text = `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\n"
	cost := 0.00042
	cost2, cost3 := 0.5, 0.25
	tests := []struct {
		name  string
		usage string
		want  llm.Usage // the zero Usage: none at all, the agent estimates
	}{
		{"openai", `{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1024}}`,
			llm.Usage{PromptTokens: 1200, CompletionTokens: 30, CachedTokens: 1024}},
		{"deepseek", `{"prompt_tokens":900,"completion_tokens":12,"prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":260}`,
			llm.Usage{PromptTokens: 900, CompletionTokens: 12, CachedTokens: 640}},
		{"openrouter", `{"prompt_tokens":50,"completion_tokens":5,"cost":0.00042}`,
			llm.Usage{PromptTokens: 50, CompletionTokens: 5, Cost: &cost}},
		{"out of bounds: none", `{"prompt_tokens":-3,"completion_tokens":-1,"prompt_tokens_details":{"cached_tokens":99},"cost":-1}`,
			llm.Usage{}},
		// Usage is advisory: what can be read is, what cannot is dropped.
		{"counts as strings and floats", `{"prompt_tokens":"12","completion_tokens":12.0,"prompt_tokens_details":{"cached_tokens":" 4 "},"cost":"0.5"}`,
			llm.Usage{PromptTokens: 12, CompletionTokens: 12, CachedTokens: 4, Cost: &cost2}},
		{"unreadable fields dropped, the rest kept", `{"prompt_tokens":{"n":1},"completion_tokens":7,"prompt_tokens_details":"x","cost":"NaN"}`,
			llm.Usage{CompletionTokens: 7}},
		{"huge and fractional", `{"prompt_tokens":1e300,"completion_tokens":2.5,"cost":1e300}`, llm.Usage{}},
		{"cost alone, in exponent form", `{"cost":2.5e-1}`, llm.Usage{Cost: &cost3}},
		{"not an object", `"lots"`, llm.Usage{}},
		{"an array", `[1,2]`, llm.Usage{}},
		{"cached above prompt", `{"prompt_tokens":10,"completion_tokens":1,"prompt_cache_hit_tokens":50}`,
			llm.Usage{PromptTokens: 10, CompletionTokens: 1, CachedTokens: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := text + `data: {"choices":[],"usage":` + tt.usage + "}\n\ndata: [DONE]\n\n"
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: rawDoer{200, body}})
			s, err := p.Stream(t.Context(), hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, got, err := drain(t, s)
			if err != io.EOF {
				t.Fatalf("Recv() final error = %v, want io.EOF", err)
			}
			if got.Content != "hi" {
				t.Errorf("content = %q, want hi", got.Content)
			}
			if tt.want == (llm.Usage{}) {
				if got.Usage != nil {
					t.Errorf("usage %+v, want none", *got.Usage)
				}
				return
			}
			if got.Usage == nil {
				t.Fatal("no usage from the empty-choices usage chunk")
			}
			if diff := cmp.Diff(tt.want, *got.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

package agent

import (
	"math"
	"testing"

	"github.com/rebound-agent/rebound/llm"
)

func TestWindowOf(t *testing.T) {
	tests := []struct {
		model              string
		configured, listed uint64
		want               uint64
	}{
		{"gpt-4o-mini", 0, 0, 128_000},
		{"openai/gpt-4o", 0, 0, 128_000},   // OpenRouter's vendor prefix
		{"gpt-4", 0, 0, 8_192},             // not gpt-4o's window
		{"o1-mini", 0, 0, 128_000},         // longest prefix wins over o1
		{"DeepSeek-Chat", 0, 0, 128_000},   // case-insensitive
		{"my-local-model", 0, 0, 0},        // unknown: no size, not a guess
		{"gpt-4o", 0, 64_000, 64_000},      // the provider's list beats the table
		{"gpt-4o", 32_000, 64_000, 32_000}, // config beats both
		{"my-local-model", 8_192, 0, 8_192},
	}
	for _, tt := range tests {
		if got := windowOf(tt.model, tt.configured, tt.listed); got != tt.want {
			t.Errorf("windowOf(%q, %d, %d) = %d, want %d", tt.model, tt.configured, tt.listed, got, tt.want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	if got := estimateTokens(nil); got != 0 {
		t.Errorf("estimateTokens(nil) = %d, want 0", got)
	}
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: "12345678"},                                                  // 8 bytes: 2 + 4 framing
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "read", Arguments: `{"p":1}`}}}, // 11 bytes: 3 + 4
	}
	if got := estimateTokens(msgs); got != 13 {
		t.Errorf("estimateTokens = %d, want 13", got)
	}
}

func TestStepCost(t *testing.T) {
	billed := 0.5
	p := Prices{Input: 2, CachedInput: 0.5, Output: 8, Currency: "USD"}
	tests := []struct {
		name   string
		u      llm.Usage
		p      Prices
		want   float64
		wantOK bool
	}{
		{"no prices, no provider cost: no figure", llm.Usage{PromptTokens: 1000, CompletionTokens: 10}, Prices{}, 0, false},
		{"provider's figure wins", llm.Usage{PromptTokens: 1000, Cost: &billed}, p, 0.5, true},
		// 600 fresh × 2 + 400 cached × 0.5 + 100 out × 8 = 1200+200+800 per million
		{"configured prices", llm.Usage{PromptTokens: 1000, CachedTokens: 400, CompletionTokens: 100}, p, 0.0022, true},
		// no cached price: cached input costs the input price
		{"cached at input price", llm.Usage{PromptTokens: 1000, CachedTokens: 400}, Prices{Input: 1}, 0.001, true},
	}
	for _, tt := range tests {
		got, ok := stepCost(tt.u, tt.p)
		if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: stepCost = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestShouldCompact(t *testing.T) {
	tests := []struct {
		used, size uint64
		fill       float64
		want       bool
	}{
		{89_999, 100_000, 0.9, false},
		{90_000, 100_000, 0.9, true},
		{90_000, 0, 0.9, false},      // unknown window
		{100_000, 100_000, 0, false}, // disabled
	}
	for _, tt := range tests {
		if got := shouldCompact(tt.used, tt.size, tt.fill); got != tt.want {
			t.Errorf("shouldCompact(%d, %d, %v) = %v, want %v", tt.used, tt.size, tt.fill, got, tt.want)
		}
	}
}

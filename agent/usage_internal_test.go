package agent

import (
	"math"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

func TestWindowOf(t *testing.T) {
	tests := []struct {
		model      string
		configured uint64
		want       uint64
	}{
		{"gpt-4o-mini", 0, 128_000},
		{"openai/gpt-4o", 0, 128_000}, // OpenRouter's vendor prefix
		{"gpt-4", 0, 8_192},           // not gpt-4o's window
		{"o1-mini", 0, 128_000},       // longest prefix wins over o1
		{"DeepSeek-Chat", 0, 128_000}, // case-insensitive
		{"my-local-model", 0, 0},      // unknown: no size, not a guess
		{"gpt-4o", 32_000, 32_000},    // config beats the table
		{"my-local-model", 8_192, 8_192},
	}
	for _, tt := range tests {
		if got := windowOf(tt.model, tt.configured); got != tt.want {
			t.Errorf("windowOf(%q, %d) = %d, want %d", tt.model, tt.configured, got, tt.want)
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

func TestUsageUpdate(t *testing.T) {
	price := func(f float64) *float64 { return &f }
	req := llm.Request{Model: "gpt-4o", Messages: []llm.Message{{Role: llm.RoleUser, Content: "12345678"}}}
	reported := &llm.Reply{Usage: &llm.Usage{PromptTokens: 1000, CompletionTokens: 200}}

	u, su, ok := usageUpdate(req, reported, 0, Prices{}, sessionUsage{})
	if !ok || u.SessionUpdate != acp.UpdateUsage || u.Used != 1200 || u.Size != 128_000 || u.Cost != nil || u.Meta != nil || su.costed {
		t.Errorf("reported usage, no prices: got %+v, %+v, %v", u, su, ok)
	}

	// Prices configured: the cost is cumulative across steps.
	p := Prices{Input: 2, Output: 10}
	_, su, _ = usageUpdate(req, reported, 0, p, sessionUsage{})
	u, _, _ = usageUpdate(req, reported, 0, p, su)
	if want := 2 * (1000*2 + 200*10) / 1e6; u.Cost == nil || u.Cost.Amount != want || u.Cost.Currency != "USD" {
		t.Errorf("cost after two steps = %+v, want %v USD", u.Cost, want)
	}

	// The provider's own figure wins over prices, in the configured currency.
	billed := &llm.Reply{Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 1, Cost: price(0.5)}}
	u, _, _ = usageUpdate(req, billed, 0, Prices{Currency: "EUR"}, sessionUsage{})
	if u.Cost == nil || u.Cost.Amount != 0.5 || u.Cost.Currency != "EUR" {
		t.Errorf("billed cost = %+v, want 0.5 EUR", u.Cost)
	}

	// No usage reported: an estimate, marked as one.
	u, _, ok = usageUpdate(req, &llm.Reply{Content: "abcdefgh"}, 0, Prices{Input: 1}, sessionUsage{})
	if want := estimateTokens([]llm.Message{req.Messages[0], {Role: llm.RoleAssistant, Content: "abcdefgh"}}); !ok || u.Used != want || u.Cost != nil {
		t.Errorf("estimate: used %d cost %+v ok %v, want %d, no cost", u.Used, u.Cost, ok, want)
	}
	if m, _ := u.Meta[UsageMetaKey].(UsageMeta); !m.Estimated {
		t.Errorf("estimate not marked in _meta: %+v", u.Meta)
	}

	// An unknown window sends nothing, but the cost still counts; a
	// configured window makes any model known.
	unknown := llm.Request{Model: "my-local-model"}
	if _, su, ok = usageUpdate(unknown, billed, 0, Prices{}, sessionUsage{}); ok || !su.costed {
		t.Errorf("unknown window: ok %v, costed %v; want no update, cost counted", ok, su.costed)
	}
	if u, _, ok = usageUpdate(unknown, billed, 32_000, Prices{}, su); !ok || u.Size != 32_000 || u.Cost.Amount != 1 {
		t.Errorf("configured window: %+v ok %v; want size 32000, cost 1", u, ok)
	}
}

// windowedProvider is a provider whose model list said windows.
type windowedProvider struct {
	llm.Provider
	windows map[string]uint64
}

func (p windowedProvider) ContextWindow(model string) uint64 { return p.windows[model] }

func TestKnownWindow_ConfigThenModelListThenTable(t *testing.T) {
	p := windowedProvider{windows: map[string]uint64{"local-model": 8_192, "gpt-4o": 64_000}}
	a := New(Config{Provider: p})
	for model, want := range map[string]uint64{
		"local-model":   8_192,  // the list is all that knows it
		"gpt-4o":        64_000, // the list beats the table: it is what this provider serves
		"gpt-4o-mini":   128_000,
		"unknown-model": 0,
	} {
		if got := windowOf(model, a.catalog.knownWindow(model)); got != want {
			t.Errorf("%s: window %d, want %d", model, got, want)
		}
	}
	a = New(Config{Provider: p, ContextWindow: 32_000})
	if got := windowOf("local-model", a.catalog.knownWindow("local-model")); got != 32_000 {
		t.Errorf("provider.context_window set: window %d, want 32000", got)
	}
}

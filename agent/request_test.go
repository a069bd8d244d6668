package agent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// The turn's request state, its messages and its usage meter alone.

// Attempts are numbered across the turn's logical requests; each request
// counts its own from its first.
func TestRequest_AttemptsNumberedAcrossTheTurn(t *testing.T) {
	var r request
	t0 := time.Now()
	r.begin(t0)
	if n := r.nextAttempt(); n != 1 || r.ofRequest() != 1 {
		t.Fatalf("first attempt %d, %d of its request; want 1, 1", n, r.ofRequest())
	}
	r.nextAttempt()
	r.continuations = 2
	r.begin(t0.Add(time.Second))
	if r.first != 3 || r.continuations != 0 || !r.start.Equal(t0.Add(time.Second)) || r.ofRequest() != 0 {
		t.Fatalf("second request: first %d, continuations %d, %d attempts; want 3, 0, 0", r.first, r.continuations, r.ofRequest())
	}
	if n := r.nextAttempt(); n != 3 || r.ofRequest() != 1 {
		t.Errorf("its first attempt is step %d, %d of its request; want 3, 1", n, r.ofRequest())
	}
	if r.open {
		t.Error("an attempt is open before its step/start is recorded")
	}
}

// The session's options apply from each request, except the model once the
// fallback switched it; the effort follows the model asked.
func TestRequest_ApplyKeepsTheFallback(t *testing.T) {
	effort := func(model, thought string) string { return model + "/" + thought }
	r := request{settings: settings{mode: ModeAsk}}
	if changed := r.apply(options{mode: ModeAsk, model: "big", thought: "high"}, effort); changed {
		t.Error("the mode changed, said apply, while it did not")
	}
	if r.model != "big" || r.effort != "big/high" {
		t.Errorf("model %q, effort %q; want big, big/high", r.model, r.effort)
	}
	r.fallBack("small", "small/low")
	if changed := r.apply(options{mode: ModeReadOnly, model: "other", thought: "medium"}, effort); !changed {
		t.Error("a new mode was not said to change")
	}
	if r.model != "small" || r.effort != "small/medium" || r.mode != ModeReadOnly || !r.fellBack {
		t.Errorf("after the fallback: %+v; want small, small/medium, read_only", r.settings)
	}
	r.maxTokens = 100
	if r.escalated(100) || !r.escalated(50) {
		t.Error("escalated does not compare the budget with the configured one")
	}
}

func TestTurnMessages_Build(t *testing.T) {
	m := turnMessages{
		history: []llm.Message{{Role: llm.RoleSystem, Content: "sys"}},
		prompt:  llm.Message{Role: llm.RoleUser, Content: "hi"},
	}
	m.add(llm.Message{Role: llm.RoleAssistant, Content: "reply"})
	base := []llm.Message{m.history[0], m.prompt, m.exchange[0]}
	tests := []struct {
		name    string
		prefix  string
		inPlace bool
		want    []llm.Message
	}{
		{name: "no continuation", want: base},
		{name: "continued in place", prefix: "Part", inPlace: true,
			want: append(append([]llm.Message{}, base...), llm.Message{Role: llm.RoleAssistant, Content: "Part", Prefix: true})},
		{name: "continued by asking", prefix: "Part",
			want: append(append([]llm.Message{}, base...), llm.Message{Role: llm.RoleAssistant, Content: "Part"},
				llm.Message{Role: llm.RoleUser, Content: continuePrompt})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]llm.Message, 0, 8)
			got := m.build(buf, tt.prefix, tt.inPlace)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if &got[:1][0] != &buf[:1][0] {
				t.Error("build did not reuse the buffer")
			}
		})
	}
}

func TestTurnMessages_StripImages(t *testing.T) {
	m := turnMessages{prompt: llm.Message{Role: llm.RoleUser, Content: "look [image: a.png]"}}
	if err := m.stripImages(); err != ErrNoImages {
		t.Fatalf("stripImages without images = %v, want ErrNoImages", err)
	}
	m.prompt.Images = []llm.Image{{Name: "a.png", MimeType: "image/png", Data: "AAAA"}}
	if err := m.stripImages(); err != nil || m.prompt.Images != nil || m.prompt.Content == "look [image: a.png]" {
		t.Errorf("stripImages = %v: %+v; want no images and a note", err, m.prompt)
	}
}

// The meter hands over each attempt's usage once, for its step/end, with
// the update to send after it; the session's cost goes on from the last
// recorded one.
func TestUsageMeter_ReadyThenTake(t *testing.T) {
	prior := 0.5
	last := &session.StepUsage{Used: 10, Size: 1000, Cost: &prior, Currency: "USD"}
	m := &usageMeter{window: func(string) uint64 { return 1000 }, prices: Prices{Input: 1e6, Output: 2e6},
		last: func() *session.StepUsage { return last }}
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	m.ready(req, &llm.Reply{Content: "ok", Usage: &llm.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 5}})
	rec, shown := m.take()
	if rec == nil || shown == nil {
		t.Fatalf("take = %v, %v; want the usage and its update", rec, shown)
	}
	wantCost := 0.5 + 100 + 40.0 // prior + 100 prompt tokens at 1/token + 20 completion tokens at 2/token
	if rec.Used != 120 || rec.Size != 1000 || rec.Estimated || rec.PromptTokens != 100 || rec.CompletionTokens != 20 || rec.CachedTokens != 5 ||
		rec.Cost == nil || *rec.Cost != wantCost || rec.Currency != "USD" {
		t.Errorf("recorded %+v, want 120 of 1000 tokens costing %v USD so far", rec, wantCost)
	}
	if shown.SessionUpdate != acp.UpdateUsage || shown.Used != 120 || shown.Size != 1000 || shown.Cost == nil || shown.Cost.Amount != wantCost {
		t.Errorf("update %+v, want 120 of 1000 costing %v", shown, wantCost)
	}
	if rec, shown := m.take(); rec != nil || shown != nil {
		t.Errorf("a second take = %v, %v; want nothing (shown once)", rec, shown)
	}
}

// Without a known window the usage is recorded, and nothing is shown; an
// attempt begun anew forgets the last one's.
func TestUsageMeter_UnknownWindowAndReset(t *testing.T) {
	m := &usageMeter{window: func(string) uint64 { return 0 }, last: func() *session.StepUsage { return nil }}
	m.ready(llm.Request{Model: "my-local-model"}, &llm.Reply{Content: "a reply of some length"})
	rec, shown := m.take()
	if rec == nil || !rec.Estimated || rec.Used == 0 || rec.Size != 0 || rec.Cost != nil || shown != nil {
		t.Errorf("take = %+v, %v; want an estimate with no size, and no update", rec, shown)
	}
	m.window = func(string) uint64 { return 1000 }
	m.ready(llm.Request{Model: "m"}, &llm.Reply{Content: "x"})
	m.reset()
	if rec, shown := m.take(); rec != nil || shown != nil {
		t.Errorf("after reset, take = %v, %v; want nothing", rec, shown)
	}
}

package agent_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// outcome is what one scripted provider request does.
type outcome int

const (
	okStop outcome = iota
	okLength
	rateLimited
	overloaded
	overflow
)

// scriptedProvider answers request n with script[n] (then okStop) and counts
// attempts and summary requests apart.
type scriptedProvider struct {
	mu        sync.Mutex
	script    []outcome
	attempts  int
	summaries int
}

func (p *scriptedProvider) Stream(_ context.Context, req llm.Request) (llm.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.Messages[0].Content != "" && len(req.Messages) == 2 && req.Messages[0].Role == llm.RoleSystem &&
		len(req.Messages[0].Content) > 9 && req.Messages[0].Content[:9] == "Summarise" {
		p.summaries++
		return &fakeStream{chunks: []llm.Chunk{{Content: "short summary"}, {FinishReason: "stop"}}}, nil
	}
	o := okStop
	if p.attempts < len(p.script) {
		o = p.script[p.attempts]
	}
	p.attempts++
	switch o {
	case rateLimited:
		return nil, &llm.Error{Status: 429, Message: "slow down"}
	case overloaded:
		return nil, &llm.Error{Status: 529, Type: "overloaded_error", Message: "overloaded"}
	case overflow:
		return nil, &llm.Error{Status: 400, Code: "context_length_exceeded", Message: "too long"}
	case okLength:
		return &fakeStream{chunks: []llm.Chunk{{Content: "part "}, {FinishReason: "length"}}}, nil
	}
	return &fakeStream{chunks: []llm.Chunk{{Content: "done"}, {FinishReason: "stop"}}}, nil
}

// Whatever the provider does, interleaving transient failures, overloads,
// overflows and truncated replies, one prompt makes at most 1 + the sum of
// the budgets attempts: every policy counts only its own retries, and none
// is reset by another's.
func TestAgent_BudgetsAreIndependentAndBounded(t *testing.T) {
	const (
		maxRetries       = 2
		maxContinuations = 2
	)
	// transient + overflow (1) + fallback (1) + escalation (1) + continuations
	bound := 1 + maxRetries + 1 + 1 + 1 + maxContinuations
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range testkit.Cases(300, 100) {
		script := make([]outcome, 4+rng.IntN(14))
		for j := range script {
			script[j] = outcome(rng.IntN(5))
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // each case its own agent, state dir and bubble
			synctest.Test(t, func(t *testing.T) {
				p := &scriptedProvider{} // the warm-up turn succeeds
				a := agent.New(agent.Config{
					StateDir: t.TempDir(), Model: "main", MaxTokens: 100, Provider: p, APIKeyEnv: "K", Logger: zerolog.Nop(),
					Recovery: recovery.Config{
						Policy: recovery.Policy{MaxRetries: maxRetries, InitialDelay: time.Second, MaxDelay: 4 * time.Second,
							MaxRetryAfter: 10 * time.Second, Retryable: recovery.DefaultRetryable},
						Overflow: true, FallbackModel: "small", FallbackAfter: 1,
					},
					Truncation: recovery.Truncation{EscalatedMaxTokens: 1000, MaxContinuations: maxContinuations},
					Overflow:   agent.Overflow{KeepRecentMessages: 0},
				})
				defer a.Close()
				s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
				if err != nil {
					t.Fatal(err)
				}
				// History to compact, so overflow can be recovered.
				if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("warm up")}, &recorder{}); err != nil {
					t.Fatal(err)
				}
				p.mu.Lock()
				p.script, p.attempts, p.summaries = script, 0, 0
				p.mu.Unlock()
				_, err = a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("q")}, &recorder{})
				if p.attempts > bound {
					t.Errorf("script %v: %d attempts, more than 1 + the budgets = %d (err %v)", script, p.attempts, bound, err)
				}
				if p.summaries > 1 {
					t.Errorf("script %v: %d summary requests, the overflow budget is 1", script, p.summaries)
				}
			})
		})
	}
}

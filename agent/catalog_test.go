package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/llm"
)

// lister is a provider whose model list is scripted: each call takes the
// next answer, after wait.
type lister struct {
	llm.Provider
	calls   atomic.Int32
	wait    time.Duration
	answers []func() ([]string, error)
}

func (l *lister) ListModels(ctx context.Context) ([]string, error) {
	n := l.calls.Add(1)
	select {
	case <-time.After(l.wait):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l.answers[min(int(n), len(l.answers))-1]()
}

func models(ids ...string) func() ([]string, error) {
	return func() ([]string, error) { return ids, nil }
}

func TestModelChoices_CacheAndFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &lister{wait: 100 * time.Millisecond, answers: []func() ([]string, error){
			models("b", "a"),
			func() ([]string, error) { return nil, errors.New("503") },
			models("c"),
		}}
		a := testAgent(t, Config{Provider: p, Models: []string{"local"}})

		// Concurrent first callers share one request.
		var wg sync.WaitGroup
		got := make([][]string, 3)
		for i := range got {
			wg.Go(func() { got[i] = a.modelChoices(t.Context(), "m") })
		}
		wg.Wait()
		for _, g := range got {
			if diff := cmp.Diff([]string{"a", "b", "m"}, g); diff != "" {
				t.Errorf("choices (-want +got):\n%s", diff)
			}
		}
		if n := p.calls.Load(); n != 1 {
			t.Fatalf("%d list requests for concurrent callers, want 1", n)
		}

		// Kept for the TTL: the session's current model is added.
		time.Sleep(modelListTTL - time.Second)
		if diff := cmp.Diff([]string{"a", "b", "m", "zz-current"}, a.modelChoices(t.Context(), "zz-current")); diff != "" || p.calls.Load() != 1 {
			t.Errorf("within the TTL: %d requests, choices (-want +got):\n%s", p.calls.Load(), diff)
		}

		// Expired: asked again; it fails, so provider.models is offered and
		// the provider is not asked again for a minute.
		time.Sleep(2 * time.Second)
		if diff := cmp.Diff([]string{"local", "m"}, a.modelChoices(t.Context(), "m")); diff != "" {
			t.Errorf("after a failed list (-want +got):\n%s", diff)
		}
		a.modelChoices(t.Context(), "m")
		if n := p.calls.Load(); n != 2 {
			t.Errorf("%d list requests, want 2: a failure is kept for %v", n, modelListRetry)
		}
		time.Sleep(modelListRetry)
		if diff := cmp.Diff([]string{"c", "m"}, a.modelChoices(t.Context(), "m")); diff != "" {
			t.Errorf("after the retry interval (-want +got):\n%s", diff)
		}
	})
}

func TestModelChoices_SlowProviderTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &lister{wait: time.Hour, answers: []func() ([]string, error){models("never")}}
		a := testAgent(t, Config{Provider: p})
		start := time.Now()
		got := a.modelChoices(t.Context(), "m")
		if waited := time.Since(start); waited != ModelListTimeout {
			t.Errorf("waited %v for the list, want %v", waited, ModelListTimeout)
		}
		if diff := cmp.Diff([]string{"m"}, got); diff != "" {
			t.Errorf("choices (-want +got):\n%s", diff)
		}
	})
}

// TestEffort: a reasoning effort is sent only for a model that takes one,
// and default sends none.
func TestEffort(t *testing.T) {
	plain := testAgent(t, Config{})
	configured := testAgent(t, Config{ReasoningEffort: "low"})
	for _, tt := range []struct {
		a              *Agent
		model, thought string
		want           string
	}{
		{plain, "gpt-4o-mini", "high", ""},
		{plain, "o3-mini", "high", "high"},
		{plain, "o3-mini", ThoughtDefault, ""},
		{configured, "llama3", "medium", "medium"},
	} {
		if got := tt.a.effort(tt.model, tt.thought); got != tt.want {
			t.Errorf("effort(%q, %q) with reasoning_effort %q = %q, want %q", tt.model, tt.thought, tt.a.cfg.ReasoningEffort, got, tt.want)
		}
	}
	if got := configured.defaults().thought; got != "low" {
		t.Errorf("default thought level with reasoning_effort low = %q", got)
	}
}

// TestModelChoices_PanicIsAFailure: a lister that panics costs nothing but
// its list.
func TestModelChoices_PanicIsAFailure(t *testing.T) {
	p := &lister{answers: []func() ([]string, error){func() ([]string, error) { panic("boom") }}}
	a := testAgent(t, Config{Provider: p, Models: []string{"local"}})
	if diff := cmp.Diff([]string{"local", "m"}, a.modelChoices(t.Context(), "m")); diff != "" {
		t.Errorf("choices (-want +got):\n%s", diff)
	}
}

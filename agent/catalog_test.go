package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
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
			wg.Go(func() { got[i] = a.catalog.modelChoices(t.Context(), "m") })
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
		if diff := cmp.Diff([]string{"a", "b", "m", "zz-current"}, a.catalog.modelChoices(t.Context(), "zz-current")); diff != "" || p.calls.Load() != 1 {
			t.Errorf("within the TTL: %d requests, choices (-want +got):\n%s", p.calls.Load(), diff)
		}

		// Expired: asked again; it fails, so the last list stays (sessions
		// were offered it) and the provider is not asked again for a
		// minute.
		time.Sleep(2 * time.Second)
		if diff := cmp.Diff([]string{"a", "b", "m"}, a.catalog.modelChoices(t.Context(), "m")); diff != "" {
			t.Errorf("after a failed list (-want +got):\n%s", diff)
		}
		a.catalog.modelChoices(t.Context(), "m")
		if n := p.calls.Load(); n != 2 {
			t.Errorf("%d list requests, want 2: a failure is kept for %v", n, modelListRetry)
		}
		time.Sleep(modelListRetry)
		if diff := cmp.Diff([]string{"c", "m"}, a.catalog.modelChoices(t.Context(), "m")); diff != "" {
			t.Errorf("after the retry interval (-want +got):\n%s", diff)
		}
	})
}

func TestModelChoices_SlowProviderTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &lister{wait: time.Hour, answers: []func() ([]string, error){models("never")}}
		a := testAgent(t, Config{Provider: p})
		start := time.Now()
		got := a.catalog.modelChoices(t.Context(), "m")
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
		if got := tt.a.menu.reasoningEffort(tt.model, tt.thought); got != tt.want {
			t.Errorf("effort(%q, %q) with reasoning_effort %q = %q, want %q", tt.model, tt.thought, tt.a.cfg.ReasoningEffort, got, tt.want)
		}
	}
	if got := configured.menu.defaults().thought; got != "low" {
		t.Errorf("default thought level with reasoning_effort low = %q", got)
	}
}

// TestModelChoices_PanicIsAFailure: a lister that panics costs nothing but
// its list.
func TestModelChoices_PanicIsAFailure(t *testing.T) {
	p := &lister{answers: []func() ([]string, error){func() ([]string, error) { panic("boom") }}}
	a := testAgent(t, Config{Provider: p, Models: []string{"local"}})
	if diff := cmp.Diff([]string{"local", "m"}, a.catalog.modelChoices(t.Context(), "m")); diff != "" {
		t.Errorf("choices (-want +got):\n%s", diff)
	}
}

// sessionUpdates is an acp.Client that keeps each update with its session.
type sessionUpdates struct {
	acp.Client
	mu  sync.Mutex
	ids []string
	got []acp.SessionUpdate
	// commands are the sessions sent the slash commands (slash_test.go),
	// kept apart: every answer gets them.
	commands []string
}

func (c *sessionUpdates) Update(_ context.Context, id string, u acp.SessionUpdate) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u.SessionUpdate == acp.UpdateAvailableCommands {
		c.commands = append(c.commands, id)
		return nil
	}
	c.ids = append(c.ids, id)
	c.got = append(c.got, u)
	return nil
}

func (c *sessionUpdates) updates() ([]string, []acp.SessionUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids), slices.Clone(c.got)
}

// modelValues are the values the model option offers in opts.
func modelValues(t *testing.T, opts []acp.ConfigOption) []string {
	t.Helper()
	for _, o := range opts {
		if o.ID == ModelConfigID {
			var out []string
			for _, c := range o.Options {
				out = append(out, c.Value)
			}
			return out
		}
	}
	t.Fatalf("no %s option in %+v", ModelConfigID, opts)
	return nil
}

// TestNewSession_AnswersBeforeTheModelList: session/new offers what is
// known at once; once answered, the session is sent all its options with
// the provider's list when that comes, once. A later session/new, with
// the list current, owes nothing.
func TestNewSession_AnswersBeforeTheModelList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &lister{wait: time.Second, answers: []func() ([]string, error){models("b", "a")}}
		a := testAgent(t, Config{Provider: p, Models: []string{"local"}})
		start := time.Now()
		res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("session/new took %v, want no wait for the model list", waited)
		}
		if diff := cmp.Diff([]string{"local", "m"}, modelValues(t, res.ConfigOptions)); diff != "" {
			t.Errorf("session/new offers (-want +got):\n%s", diff)
		}
		c := &sessionUpdates{}
		a.SessionAnswered(t.Context(), res.SessionID, c)
		synctest.Wait()
		if _, got := c.updates(); len(got) != 0 {
			t.Fatalf("updates before the list came: %+v", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		ids, got := c.updates()
		if len(got) != 1 || ids[0] != res.SessionID || got[0].SessionUpdate != acp.UpdateConfigOption {
			t.Fatalf("updates once the list came: %v %+v, want one config_option_update for %s", ids, got, res.SessionID)
		}
		want := a.menu.optionsWith(a.menu.defaults(), []string{"a", "b", "m"})
		if diff := cmp.Diff(want, got[0].ConfigOptions); diff != "" {
			t.Errorf("the update's options (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(res.ConfigOptions[0], got[0].ConfigOptions[0]); diff != "" {
			t.Errorf("the mode option changed (-want +got):\n%s", diff)
		}

		res2, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a", "b", "m"}, modelValues(t, res2.ConfigOptions)); diff != "" {
			t.Errorf("second session/new offers (-want +got):\n%s", diff)
		}
		a.SessionAnswered(t.Context(), res2.SessionID, c)
		time.Sleep(ModelListTimeout)
		synctest.Wait()
		if _, got := c.updates(); len(got) != 1 || p.calls.Load() != 1 {
			t.Errorf("%d updates and %d list requests after a second session/new, want 1 and 1", len(got), p.calls.Load())
		}
	})
}

// TestSessionAnswered_SendsNothing: nothing follows an answer when the
// list fails or times out (the editor keeps what it was offered, and knows
// of a model it chose meanwhile from that answer), when the session was
// closed before the list came, or when the list offers what the answer
// did.
func TestSessionAnswered_SendsNothing(t *testing.T) {
	for _, tt := range []struct {
		name   string
		wait   time.Duration
		answer func() ([]string, error)
		close  bool
	}{
		{"failed", time.Second, func() ([]string, error) { return nil, errors.New("503") }, false},
		{"timed out", time.Hour, models("a"), false},
		{"closed", time.Second, models("a"), true},
		{"same list", time.Second, models("local"), false},
	} {
		chosen := tt.name != "same list" // else the choices would differ
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &lister{wait: tt.wait, answers: []func() ([]string, error){tt.answer}}
				a := testAgent(t, Config{Provider: p, Models: []string{"local"}})
				res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				c := &sessionUpdates{}
				a.SessionAnswered(t.Context(), res.SessionID, c)
				if chosen {
					s, err := a.store.lookup(res.SessionID)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := a.options.set(t.Context(), s, ModelConfigID, "other"); err != nil {
						t.Fatal(err)
					}
				}
				if tt.close {
					if _, err := a.CloseSession(t.Context(), acp.CloseSessionRequest{SessionID: res.SessionID}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(ModelListTimeout + time.Second)
				synctest.Wait()
				if _, got := c.updates(); len(got) != 0 {
					t.Errorf("updates: %+v, want none", got)
				}
				if p.calls.Load() != 1 {
					t.Errorf("%d list requests, want 1", p.calls.Load())
				}
			})
		})
	}
}

// TestSessionAnswered_OptionsAsTheyAreThen: the update carries the
// session's options as they are when the list comes: a model chosen
// meanwhile that takes a reasoning effort brings the thought_level option.
func TestSessionAnswered_OptionsAsTheyAreThen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &lister{wait: time.Second, answers: []func() ([]string, error){models("o3-mini", "gpt-4o-mini")}}
		a := testAgent(t, Config{Provider: p})
		res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.ConfigOptions) != 2 {
			t.Fatalf("session/new options: %+v, want mode and model (m takes no reasoning effort)", res.ConfigOptions)
		}
		c := &sessionUpdates{}
		a.SessionAnswered(t.Context(), res.SessionID, c)
		s, err := a.store.lookup(res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.options.set(t.Context(), s, ModelConfigID, "o3-mini"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		_, got := c.updates()
		if len(got) != 1 {
			t.Fatalf("updates: %+v, want one", got)
		}
		o := a.menu.defaults()
		o.model = "o3-mini"
		want := a.menu.optionsWith(o, []string{"gpt-4o-mini", "m", "o3-mini"})
		if len(want) != 3 {
			t.Fatalf("o3-mini's options: %+v, want a thought_level", want)
		}
		if diff := cmp.Diff(want, got[0].ConfigOptions); diff != "" {
			t.Errorf("the update's options (-want +got):\n%s", diff)
		}
	})
}

// The catalog alone: an answer made before the provider's list came owes
// the session the list, once per such answer; a current list owes nothing.
func TestCatalog_OwesAnAnswerMadeWithoutTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nop := zerolog.Nop()
		p := &lister{wait: time.Second, answers: []func() ([]string, error){models("b", "a")}}
		c := &catalog{provider: func() llm.Provider { return p }, model: "m", fallback: []string{"local"}, log: &nop}
		s := &sessionState{id: "sess_1"}
		if diff := cmp.Diff([]string{"local", "m"}, c.answerChoices(s, "m")); diff != "" {
			t.Errorf("choices before the list (-want +got):\n%s", diff)
		}
		c.answerChoices(s, "m") // a second answer before the list came
		for i := range 2 {
			if o, ok := c.answered("sess_1"); !ok || o.s != s || !slices.Equal(o.offered, []string{"local", "m"}) {
				t.Fatalf("answer %d: owed %+v, %v; want the choices it offered", i+1, o, ok)
			}
		}
		if _, ok := c.answered("sess_1"); ok {
			t.Error("owed more than once per answer")
		}
		if list, ok := c.providerModels(t.Context()); !ok || !slices.Equal(list, []string{"b", "a"}) {
			t.Errorf("providerModels = %v, %v; want b, a", list, ok)
		}
		if diff := cmp.Diff([]string{"a", "b", "m", "other"}, c.answerChoices(s, "other")); diff != "" {
			t.Errorf("choices with the list (-want +got):\n%s", diff)
		}
		if _, ok := c.answered("sess_1"); ok || p.calls.Load() != 1 {
			t.Errorf("an answer with a current list is owed something (or the list was asked %d times)", p.calls.Load())
		}
	})
}

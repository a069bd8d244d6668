package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// gated is an agent whose every request goes through gate; models records
// the model of each gate asked for.
func gated(t *testing.T, gate *testkit.Gate, models *[]string, answers ...func(context.Context, llm.Request) (llm.Stream, error)) *Agent {
	t.Helper()
	var mu sync.Mutex
	cfg := Config{Provider: &script{answers: answers}, Recovery: recovery.Config{Policy: recovery.Policy{
		MaxRetries: 1, InitialDelay: time.Second, MaxDelay: time.Second, MaxRetryAfter: 10 * time.Second, Retryable: recovery.DefaultRetryable}}}
	cfg.Gates = func(model string) recovery.Gate {
		mu.Lock()
		defer mu.Unlock()
		if models != nil {
			*models = append(*models, model)
		}
		return gate
	}
	return testAgent(t, cfg)
}

func otherChat(d time.Duration) testkit.GateHold {
	return testkit.GateHold{For: d, Reason: recovery.HoldCooldown, By: recovery.HoldByOtherChat, Source: "x-ratelimit-reset-requests"}
}

// sharedRecords are the log's llm/retry records of shared waits.
func sharedRecords(events []session.Event) []session.LLMRetry {
	var out []session.LLMRetry
	for _, ev := range events {
		var r session.LLMRetry
		if ev.Type == session.TypeLLMRetry && json.Unmarshal(ev.Data, &r) == nil && r.Policy == recovery.PolicyShared {
			out = append(out, r)
		}
	}
	return out
}

// TestTurn_WaitsOnTheSharedLimit: a request the shared limit holds (another
// chat reached it) waits before it is sent: recorded (llm/retry, policy
// shared, synced) before the wait, shown as a retry's wait is (the _meta
// progress, the status card, which says who reached the limit and ends
// when the request is answered), and /status says it, apart from the
// retries.
func TestTurn_WaitsOnTheSharedLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &testkit.Gate{Holds: []testkit.GateHold{otherChat(8 * time.Second)}}
		var models []string
		a := gated(t, gate, &models, text("ok"))
		id := newSession(t, a)
		e := &editor{}
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := prompt1(t.Context(), a, id, "hi", e)
			done <- err
		}()
		time.Sleep(4 * time.Second)
		synctest.Wait()
		// Recorded before the wait: a crash now leaves it on record.
		ld, err := session.Load(session.Path(a.cfg.StateDir, id))
		if err != nil {
			t.Fatal(err)
		}
		if w := sharedRecords(ld.Events); len(w) != 1 || w[0].DelayMs != 8000 || w[0].Retry != 1 {
			t.Fatalf("during the wait, shared records %+v; want one of 8000 ms", w)
		}
		if n := a.cfg.Provider.(*script).count(); n != 0 {
			t.Fatalf("%d requests during the hold, want none", n)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 8*time.Second {
			t.Errorf("the turn took %v, want the 8s hold", got)
		}
		if got := gate.Asked(); len(got) != 1 || got[0] != id {
			t.Errorf("the gate was asked for %v, want once for the session %q", got, id)
		}
		if len(models) != 1 || models[0] != "m" {
			t.Errorf("gates asked for models %v, want the request's [m]", models)
		}
		progress := retryProgress(e)
		if len(progress) != 2 || progress[0].Phase != recovery.PhaseScheduled || progress[0].Policy != recovery.PolicyShared ||
			progress[0].DelayMs != 8000 || progress[0].Failure == nil || progress[0].Failure.Held == nil ||
			progress[0].Failure.Held.By != recovery.HoldByOtherChat || progress[1].Phase != recovery.PhaseStarted {
			t.Errorf("retry progress %+v, want scheduled (8s, shared, by another chat) then started", progress)
		}
		want := []string{
			"in_progress: Rate limit hit by another chat, sending in 8.0s",
			"in_progress: Rate limit hit by another chat, sending now",
			"completed: Rate limit hit by another chat, sent after the wait",
		}
		if got := statusTitles(e); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("status cards:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := answered(e); got != "ok" {
			t.Errorf("reply %q", got)
		}
		_, status := slashPrompt(t, a, id, "/status")
		if want := "Last turn (1) ended normally. Rebound held the request 8s for the provider's shared rate limit, as learnt by another chat."; !strings.Contains(status, want) {
			t.Errorf("/status:\n%s\nwant it to say %q", status, want)
		}
	})
}

// TestTurn_HoldCancelled: session/cancel during a hold ends the turn
// cancelled at once, with no request sent, and the card says so.
func TestTurn_HoldCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &testkit.Gate{Holds: []testkit.GateHold{otherChat(8 * time.Second)}}
		a := gated(t, gate, nil, text("ok"))
		id := newSession(t, a)
		ctx, cancel := context.WithCancel(t.Context())
		e := &editor{}
		type result struct {
			resp acp.PromptResponse
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := prompt1(ctx, a, id, "hi", e)
			done <- result{resp, err}
		}()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		start := time.Now()
		cancel()
		r := <-done
		if r.err != nil || r.resp.StopReason != acp.StopCancelled || time.Since(start) != 0 {
			t.Fatalf("cancelled turn = %+v, %v after %v; want stopReason cancelled at once", r.resp, r.err, time.Since(start))
		}
		if n := a.cfg.Provider.(*script).count(); n != 0 {
			t.Errorf("%d requests, want none", n)
		}
		if progress := retryProgress(e); len(progress) != 2 || progress[1].Phase != recovery.PhaseCancelled {
			t.Errorf("retry progress %+v, want scheduled then cancelled", progress)
		}
		titles := statusTitles(e)
		if last := titles[len(titles)-1]; last != "failed: Rate limit hit by another chat, cancelled" {
			t.Errorf("the card ends %q, want it cancelled", last)
		}
	})
}

// TestTurn_HoldTooLong: a hold longer than max_retry_after fails the turn
// at once, RATE_LIMIT with the wait in its facts, in words that say who
// reached the limit and how to wait for it; /retry wait then waits it.
func TestTurn_HoldTooLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &testkit.Gate{Holds: []testkit.GateHold{otherChat(40 * time.Second)}}
		a := gated(t, gate, nil, text("ok"))
		id := newSession(t, a)
		_, err := prompt1(t.Context(), a, id, "hi", &editor{})
		var re *acp.RequestError
		if !errors.As(err, &re) {
			t.Fatalf("turn = %v, want the give-up", err)
		}
		until := recovery.ClockText(time.Now().Add(40*time.Second), time.Now())
		want := "Held by the provider's shared rate limit; the limit, reached by another chat, resets in 40s (x-ratelimit-reset-requests), longer than max_retry_after (10s). " +
			"Type `/retry wait` to wait for it (until " + until + ") and run the turn again."
		if re.Message != want {
			t.Errorf("message\n %q\nwant\n %q", re.Message, want)
		}
		data, _ := re.Data.(FailureData)
		if f := data.Failure; f == nil || f.Code != recovery.RateLimit || f.RetryAfterMs == nil || *f.RetryAfterMs != 40000 {
			t.Errorf("failure facts %+v, want RATE_LIMIT with retryAfterMs 40000", data.Failure)
		}
		if n := a.cfg.Provider.(*script).count(); n != 0 {
			t.Errorf("%d requests, want none", n)
		}
		start := time.Now()
		resp, err := prompt1(t.Context(), a, id, "/retry wait", &editor{})
		if err != nil || resp.StopReason != acp.StopEndTurn || time.Since(start) != 40*time.Second {
			t.Errorf("/retry wait = %+v, %v after %v; want the turn run after 40s", resp, err, time.Since(start))
		}
	})
}

// TestTurn_GateFollowsTheFallback: the gate is the bucket of the model the
// request goes to, which the overload fallback switches.
func TestTurn_GateFollowsTheFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var models []string
		a := gated(t, &testkit.Gate{}, &models, overloaded, text("ok"))
		a.cfg.Recovery.FallbackModel, a.cfg.Recovery.FallbackAfter = "small", 1
		id := newSession(t, a)
		if _, err := prompt1(t.Context(), a, id, "hi", &editor{}); err != nil {
			t.Fatal(err)
		}
		if strings.Join(models, " ") != "m small" {
			t.Errorf("gates asked for %v, want [m small]", models)
		}
	})
}

// holdScenarios are status scenarios of waits on the shared rate limit
// (TestStatuses_ReplayedAsShown), generated over who learnt it, how it
// holds (cooldown, pacing), how long (shown as a duration or a clock time,
// too long to wait), and how the turn goes on (answered, a failure after
// the wait, cancelled during it).
func holdScenarios() []statusScenario {
	var out []statusScenario
	ends := []struct {
		name    string
		answers []func(context.Context, llm.Request) (llm.Stream, error)
		cancel  bool
	}{
		{"answered", []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}, false},
		{"then limited", []func(context.Context, llm.Request) (llm.Stream, error){limited}, false},
		{"then refused", []func(context.Context, llm.Request) (llm.Stream, error){unauthorized}, false},
		{"cancelled", []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}, true},
	}
	for _, by := range []string{recovery.HoldBySelf, recovery.HoldByOtherChat, recovery.HoldByOtherProcess} {
		for _, reason := range []string{recovery.HoldCooldown, recovery.HoldPacing} {
			for _, d := range []time.Duration{2 * time.Second, 9 * time.Second, 40 * time.Second} {
				for _, end := range ends {
					if end.cancel && d > 10*time.Second {
						continue // given up at once: nothing to cancel
					}
					h := testkit.GateHold{For: d, Reason: reason, By: by, Source: "x-ratelimit-reset-requests"}
					sc := statusScenario{
						name: "a hold, " + reason + " by " + by + ", " + d.String() + ", " + end.name, covers: []string{"scheduled"},
						cfg: func(c *Config) {
							answers(end.answers...)(c)
							gate := &testkit.Gate{Holds: []testkit.GateHold{h}}
							c.Gates = func(string) recovery.Gate { return gate }
						},
						run: turns("hi"),
					}
					if end.cancel {
						sc.run = func(t *testing.T, a *Agent, id string, c acp.Client) {
							ctx, cancel := context.WithCancel(t.Context())
							time.AfterFunc(time.Second, cancel)
							_, _ = prompt1(ctx, a, id, "hi", c)
						}
					}
					out = append(out, sc)
				}
			}
		}
	}
	return out
}

// TestTurn_HoldThenFailure: a request that waited on the shared limit and
// then failed gave up without a retry: the hold is none, and the card's
// give-up counts as the error does.
func TestTurn_HoldThenFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &testkit.Gate{Holds: []testkit.GateHold{{For: 2 * time.Second, Reason: recovery.HoldCooldown, By: recovery.HoldBySelf}}}
		a := gated(t, gate, nil, unauthorized)
		id := newSession(t, a)
		e := &editor{}
		if _, err := prompt1(t.Context(), a, id, "hi", e); err == nil {
			t.Fatal("the turn did not fail")
		}
		titles := statusTitles(e)
		if last := titles[len(titles)-1]; last != "failed: Rate limit hit by this chat; gave up without a retry" {
			t.Errorf("the card ends %q, want it to have given up without a retry", last)
		}
	})
}

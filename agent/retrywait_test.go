package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// timedScript is script that also notes when (since start) each request
// came, on the bubble's clock.
type timedScript struct {
	script
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (p *timedScript) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	p.mu.Lock()
	p.at = append(p.at, time.Since(p.start))
	p.mu.Unlock()
	return p.script.Stream(ctx, req)
}

func (p *timedScript) times() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.at...)
}

// namedWait is a 429 whose Retry-After names a wait of secs seconds.
func namedWait(secs string) func(context.Context, llm.Request) (llm.Stream, error) {
	return func(context.Context, llm.Request) (llm.Stream, error) {
		return nil, &llm.Error{Status: 429, Code: "rate_limit_exceeded", Message: "Rate limit reached.", Header: http.Header{"Retry-After": {secs}}}
	}
}

// waitAgent is an agent whose provider names a 40-minute wait once, then
// answers; max_retry_after is 10 s, so Rebound gives up on it at once.
func waitAgent(t *testing.T, dir string, answers ...func(context.Context, llm.Request) (llm.Stream, error)) (*Agent, *timedScript) {
	t.Helper()
	if answers == nil {
		answers = append(answers, namedWait("2400"), text("Here it is."))
	}
	p := &timedScript{script: script{answers: answers}, start: time.Now()}
	a := testAgent(t, Config{Provider: p, StateDir: dir, Recovery: recovery.Config{Policy: recovery.Policy{
		MaxRetries: 2, InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxRetryAfter: 10 * time.Second, Retryable: recovery.DefaultRetryable}}})
	return a, p
}

func prompt1(ctx context.Context, a *Agent, id, text string, c acp.Client) (acp.PromptResponse, error) {
	return a.Prompt(ctx, acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}, c)
}

// retryProgress is the _meta["rebound/retry"] payloads e was sent.
func retryProgress(e *editor) []recovery.RetryProgress {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []recovery.RetryProgress
	for _, u := range e.updates {
		if p, ok := u.Meta[RetryMetaKey].(recovery.RetryProgress); ok && u.SessionUpdate == acp.UpdateSessionInfo {
			out = append(out, p)
		}
	}
	return out
}

func statusTitles(e *editor) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, u := range e.updates {
		if strings.HasPrefix(u.ToolCallID, statusIDPrefix) {
			out = append(out, u.Status+": "+u.Title)
		}
	}
	return out
}

// waitRecords are the turn's llm/retry records of /retry wait.
func waitRecords(events []session.Event) []session.LLMRetry {
	var out []session.LLMRetry
	for _, ev := range events {
		var r session.LLMRetry
		if ev.Type == session.TypeLLMRetry && json.Unmarshal(ev.Data, &r) == nil && r.Policy == policyWait {
			out = append(out, r)
		}
	}
	return out
}

// TestRetryWait_WaitsTheNamedTime: a 429 naming 40 minutes, beyond
// max_retry_after, fails the turn with a message ending in how to wait for
// it; /retry wait then waits exactly those 40 minutes, shown as Rebound's
// retry waits are (the _meta progress and the status tool call), and runs
// the turn again.
func TestRetryWait_WaitsTheNamedTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, p := waitAgent(t, t.TempDir())
		id := newSession(t, a)
		_, err := prompt1(t.Context(), a, id, "Hello", &editor{})
		var re *acp.RequestError
		if !errors.As(err, &re) {
			t.Fatalf("the first turn: %v, want the give-up", err)
		}
		until := time.Now().Add(40 * time.Minute).Local().Format("15:04:05 MST")
		if want := "Type `/retry wait` to wait for it (until " + until + ") and run the turn again."; !strings.HasSuffix(re.Message, want) {
			t.Errorf("failure message %q\ndoes not end with %q", re.Message, want)
		}

		e := &editor{}
		start := time.Now()
		resp, err := prompt1(t.Context(), a, id, "/retry wait", e)
		if err != nil || resp.StopReason != acp.StopEndTurn {
			t.Fatalf("/retry wait = %+v, %v", resp, err)
		}
		if got := time.Since(start); got != 40*time.Minute {
			t.Errorf("/retry wait took %v, want exactly 40m", got)
		}
		if at := p.times(); len(at) != 2 || at[1] != 40*time.Minute {
			t.Errorf("requests at %v, want [0s 40m0s]", at)
		}
		if p.reqs[1].Messages[len(p.reqs[1].Messages)-1].Content != "Hello" {
			t.Errorf("the retried request ends with %q, want the failed turn's prompt", p.reqs[1].Messages[len(p.reqs[1].Messages)-1].Content)
		}
		progress := retryProgress(e)
		if len(progress) != 2 || progress[0].Phase != recovery.PhaseScheduled || progress[0].DelayMs != 2400000 || progress[0].Policy != policyWait ||
			progress[0].Failure == nil || progress[0].Failure.Code != recovery.RateLimit || progress[1].Phase != recovery.PhaseStarted {
			t.Errorf("retry progress %+v, want scheduled (40m, wait, the 429) then started", progress)
		}
		titles := strings.Join(statusTitles(e), "\n")
		for _, want := range []string{"in_progress: Rate limited by the provider (429), waiting until " + recovery.ClockText(start.Add(40*time.Minute), start) + " to run the turn again",
			"completed: Rate limited by the provider (429), waited and ran the turn again"} {
			if !strings.Contains(titles, want) {
				t.Errorf("status tool calls:\n%s\nwant %q", titles, want)
			}
		}
		if got := answered(e); got != "Here it is." {
			t.Errorf("reply %q", got)
		}
		events := mustLoad(t, a, id)
		if w := waitRecords(events); len(w) != 1 || w[0].DelayMs != 2400000 || w[0].Turn != 2 {
			t.Errorf("wait records %+v, want one of 2400000 ms in turn 2", w)
		}
		if n := count(events, session.TypeLLMRetryStarted); n != 1 {
			t.Errorf("%d llm/retry-started, want 1", n)
		}
	})
}

// TestRetryWait_Cancel: session/cancel during the wait ends the turn
// cancelled at once, with no request made; a /retry wait after it waits
// only what is left (the cancelled wait's record says when it ends).
func TestRetryWait_Cancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, p := waitAgent(t, t.TempDir())
		id := newSession(t, a)
		if _, err := prompt1(t.Context(), a, id, "Hello", &editor{}); err == nil {
			t.Fatal("the first turn did not fail")
		}
		ctx, cancel := context.WithCancel(t.Context())
		e := &editor{}
		type result struct {
			resp acp.PromptResponse
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := prompt1(ctx, a, id, "/retry wait", e)
			done <- result{resp, err}
		}()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := p.count(); n != 1 {
			t.Fatalf("%d requests during the wait, want 1 (the failed one)", n)
		}
		cancel()
		r := <-done
		if r.err != nil || r.resp.StopReason != acp.StopCancelled {
			t.Fatalf("cancelled /retry wait = %+v, %v; want stopReason cancelled", r.resp, r.err)
		}
		if got := time.Since(p.start); got != 10*time.Minute {
			t.Errorf("the cancel answered at %v, want at once (10m)", got)
		}
		if progress := retryProgress(e); len(progress) != 2 || progress[1].Phase != recovery.PhaseCancelled {
			t.Errorf("retry progress %+v, want scheduled then cancelled", progress)
		}
		if titles := strings.Join(statusTitles(e), "\n"); !strings.Contains(titles, "failed: Rate limited by the provider (429), cancelled") {
			t.Errorf("status tool calls:\n%s\nwant the wait closed as cancelled", titles)
		}
		events := mustLoad(t, a, id)
		var end session.TurnEnd
		_ = json.Unmarshal(events[len(events)-1].Data, &end)
		if events[len(events)-1].Type != session.TypeTurnEnd || end.StopReason != string(acp.StopCancelled) || len(end.Error) != 0 {
			t.Errorf("last event %s %s, want turn/end cancelled", events[len(events)-1].Type, events[len(events)-1].Data)
		}

		// Cancelled again 10 minutes into the 30 left: the next waits 20.
		ctx, cancel = context.WithCancel(t.Context())
		go func() {
			resp, err := prompt1(ctx, a, id, "/retry wait", &editor{})
			done <- result{resp, err}
		}()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		cancel()
		if r := <-done; r.err != nil || r.resp.StopReason != acp.StopCancelled {
			t.Fatalf("second /retry wait = %+v, %v; want stopReason cancelled", r.resp, r.err)
		}

		start := time.Now()
		resp, err := prompt1(t.Context(), a, id, "/retry wait", &editor{})
		if err != nil || resp.StopReason != acp.StopEndTurn {
			t.Fatalf("third /retry wait = %+v, %v", resp, err)
		}
		if got := time.Since(start); got != 20*time.Minute {
			t.Errorf("the third /retry wait took %v, want the 20m left", got)
		}
		if w := waitRecords(mustLoad(t, a, id)); len(w) != 3 || w[1].DelayMs != 1800000 || w[2].DelayMs != 1200000 {
			t.Errorf("wait records %+v, want 40m, 30m, then 20m", w)
		}
		if n := p.count(); n != 2 {
			t.Errorf("%d requests, want the failed one and the one after the wait", n)
		}
	})
}

// TestRetryWait_AfterRestart: the deadline is the log's (the failure's
// time plus the named wait): after a restart 15 minutes on, the wait is
// the 25 minutes left; once the time has passed, /retry wait runs the turn
// at once, recording no wait.
func TestRetryWait_AfterRestart(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration
		wait  time.Duration
	}{{"left", 15 * time.Minute, 25 * time.Minute}, {"passed", 41 * time.Minute, 0}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				a, _ := waitAgent(t, dir)
				id := newSession(t, a)
				if _, err := prompt1(t.Context(), a, id, "Hello", &editor{}); err == nil {
					t.Fatal("the first turn did not fail")
				}
				a.Close()
				time.Sleep(c.after)

				b, p := waitAgent(t, dir, text("Here it is."))
				if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, &editor{}); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				resp, err := prompt1(t.Context(), b, id, "/retry wait", &editor{})
				if err != nil || resp.StopReason != acp.StopEndTurn {
					t.Fatalf("/retry wait = %+v, %v", resp, err)
				}
				if got := time.Since(start); got != c.wait {
					t.Errorf("/retry wait waited %v, want %v", got, c.wait)
				}
				if at := p.times(); len(at) != 1 || at[0] != c.wait {
					t.Errorf("request at %v, want after %v", at, c.wait)
				}
				want := 1
				if c.wait == 0 {
					want = 0
				}
				if w := waitRecords(mustLoad(t, b, id)); len(w) != want {
					t.Errorf("wait records %+v, want %d", w, want)
				}
			})
		})
	}
}

// TestRetryWait_Refusals: /retry wait asks nobody and waits for nothing
// when there is no named time to wait for, or one too far away.
func TestRetryWait_Refusals(t *testing.T) {
	badRequest := func(context.Context, llm.Request) (llm.Stream, error) {
		return nil, &llm.Error{Status: 400, Code: "invalid_value", Message: "bad"}
	}
	for _, c := range []struct {
		name  string
		first func(context.Context, llm.Request) (llm.Stream, error)
		hint  string // in the first turn's failure message; "" for none
		want  string
	}{
		{"no named time", badRequest, "", "Nothing to wait for: the last turn's failure named no time to wait until. `/retry` runs it again now."},
		{"further than 24h", namedWait("200000"), "That is more than the 24h `/retry wait` waits", "The provider named a time more than 24h away (until 2000-01-0"},
		{"the provider's forever", namedWait("99999999999999"), "the provider asked for longer than that", "more than 24h away (the provider asked for longer than that)"},
		{"the last turn went well", text("fine"), "", "Nothing to retry: the last turn did not fail and was not cancelled."},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, p := waitAgent(t, t.TempDir(), c.first, text("never"))
				id := newSession(t, a)
				_, err := prompt1(t.Context(), a, id, "Hello", &editor{})
				var re *acp.RequestError
				if errors.As(err, &re) && (c.hint == "") == strings.Contains(re.Message, "/retry wait") {
					t.Errorf("failure message %q; want hint %q", re.Message, c.hint)
				}
				if c.hint != "" && (re == nil || !strings.Contains(re.Message, c.hint)) {
					t.Errorf("failure %v, want it to say %q", err, c.hint)
				}
				start := time.Now()
				resp, got := slashPrompt(t, a, id, "/retry wait")
				if resp.StopReason != acp.StopEndTurn || !strings.Contains(got, c.want) {
					t.Errorf("/retry wait answered %q (%s), want %q", got, resp.StopReason, c.want)
				}
				if p.count() != 1 || time.Since(start) != 0 {
					t.Errorf("%d requests, %v waited; want the first request only, no wait", p.count(), time.Since(start))
				}
			})
		})
	}
}

// TestRetryWaitHint: the hint is for waits beyond max_retry_after only.
func TestRetryWaitHint(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.Local)
	for _, c := range []struct {
		f    *recovery.Failure
		want string
	}{
		{nil, ""},
		{&recovery.Failure{Code: recovery.Server}, ""},
		{&recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ms(10000)}, ""}, // Rebound waits that itself
		{&recovery.Failure{Code: recovery.Quota, RetryAfterMs: ms(40 * 60 * 1000)},
			"Type `/retry wait` to wait for it (until " + now.Add(40*time.Minute).Format("15:04:05 MST") + ") and run the turn again."},
		{&recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ms(11 * 3600 * 1000)},
			"Type `/retry wait` to wait for it (until " + now.Add(11*time.Hour).Format("2006-01-02 15:04:05 MST") + ") and run the turn again."},
	} {
		if got := retryWaitHint(c.f, 10*time.Second, now); got != c.want {
			t.Errorf("retryWaitHint(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 40 * time.Minute: "40m", 90 * time.Second: "1m30s", 10 * time.Second: "10s", 2*time.Hour + 10*time.Minute: "2h10m"} {
		if got := recovery.ShortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestStatus_NamesThePendingWait: /status says when /retry wait would run
// the failed turn.
func TestStatus_NamesThePendingWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := waitAgent(t, t.TempDir())
		id := newSession(t, a)
		if _, err := prompt1(t.Context(), a, id, "Hello", &editor{}); err == nil {
			t.Fatal("the first turn did not fail")
		}
		time.Sleep(10 * time.Minute)
		_, got := slashPrompt(t, a, id, "/status")
		until := time.Now().Add(30 * time.Minute).Local().Format("15:04:05 MST")
		if want := "`/retry wait` waits until " + until + " (30m from now) and runs it then."; !strings.Contains(got, want) {
			t.Errorf("/status = %q\nwant %q", got, want)
		}
	})
}

// TestStatus_ReportsWaitsAsTheyHappened: a /retry wait of 40 minutes
// cancelled after one second waited one second, and /status says so,
// from the log's times, not the 40 minutes planned (issue 29).
func TestStatus_ReportsWaitsAsTheyHappened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := waitAgent(t, t.TempDir())
		id := newSession(t, a)
		if _, err := prompt1(t.Context(), a, id, "Hello", &editor{}); err == nil {
			t.Fatal("the first turn did not fail")
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := prompt1(ctx, a, id, "/retry wait", &editor{})
			done <- err
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		_, got := slashPrompt(t, a, id, "/status")
		if want := "Rebound made 1 retry (RATE_LIMIT ×1), waiting 1s in all; then you cancelled."; !strings.Contains(got, want) {
			t.Errorf("/status = %q\nwant it to contain %q", got, want)
		}
	})
}

package recovery_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/recovery"
)

func TestWaitWords(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	at := time.Date(2026, 12, 6, 13, 59, 50, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, ""},
		{-time.Second, ""},
		{500 * time.Millisecond, "in 0.5s"},
		{recovery.ClockAfter - 100*time.Millisecond, "in 29.9s"},
		{recovery.ClockAfter, "at 14:00:20 UTC"},
		{2*time.Minute + 20*time.Second, "at 14:02:10 UTC"},
		{11 * time.Hour, "at 2026-12-07 00:59:50 UTC"},
	} {
		if got := recovery.WaitWords(c.d, at); got != c.want {
			t.Errorf("WaitWords(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestGaveUp(t *testing.T) {
	for _, c := range []struct {
		n    int
		d    time.Duration
		want string
	}{
		{2, 1500 * time.Millisecond, "gave up after 2 retries in 1.5s"},
		{1, time.Second, "gave up after 1 retry in 1.0s"},
		{0, 30 * time.Second, "gave up without a retry, after 30.0s"},
	} {
		if got := recovery.GaveUp(c.n, c.d); got != c.want {
			t.Errorf("GaveUp(%d, %v) = %q, want %q", c.n, c.d, got, c.want)
		}
	}
	w := recovery.Wording{Retry: recovery.Retry{Failure: &recovery.Failure{Code: recovery.Server, Status: 503}}}
	if got, want := w.GaveUpAfter(2, "busy"), "The provider had a server error (503); gave up after 2 retries: busy"; got != want {
		t.Errorf("GaveUpAfter = %q, want %q", got, want)
	}
}

var (
	countRe   = regexp.MustCompile(`(?i)\b(retry|attempt) \d+ of \d+`)
	durations = regexp.MustCompile(`\bin \d+\.\ds\b`)
)

// TestWording_TitleAndBodyAgree: for any retry (any policy, action, wait,
// continuing or not), every state's title and body count the same way
// (retries, the policy's own number and budget), the body is never empty,
// a wait of ClockAfter or more is never said as a duration that does not
// count down, and the ended states say nothing of a wait to come.
func TestWording_TitleAndBodyAgree(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	actions := []recovery.Action{recovery.ActionNone, recovery.ActionCompact, recovery.ActionFallback, recovery.ActionStripImages, recovery.ActionEscalate, recovery.ActionContinue}
	policies := []string{recovery.PolicyTransient, "rule:1", recovery.PolicyWait, recovery.PolicyOverflow, recovery.PolicyShared}
	codes := []recovery.Code{recovery.RateLimit, recovery.Overloaded, recovery.Server, recovery.Timeout, recovery.Transport}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range testkit.Cases(2000, 400) {
		budget := 1 + rng.IntN(5)
		n := 1 + rng.IntN(budget)
		f := &recovery.Failure{Code: codes[rng.IntN(len(codes))], Status: 400 + rng.IntN(200)}
		if rng.IntN(2) == 0 {
			f.Message = "busy"
		}
		if rng.IntN(3) == 0 {
			ms := int64(rng.IntN(100000))
			f.RetryAfterMs = &ms
		}
		if rng.IntN(8) == 0 {
			f = nil
		}
		r := recovery.Retry{N: n, Max: budget, PolicyN: n, Policy: policies[rng.IntN(len(policies))],
			Action: actions[rng.IntN(len(actions))], Delay: time.Duration(rng.IntN(120000)) * time.Millisecond, Failure: f}
		if r.Policy == recovery.PolicyWait {
			r.Action = recovery.ActionNone
		}
		shared := 0
		if r.Policy == recovery.PolicyShared { // a hold: its facts say whose, and it is no retry
			r.Action, r.Max = recovery.ActionNone, 0
			reasons := []string{recovery.HoldCooldown, recovery.HoldPacing, ""}
			bys := []string{recovery.HoldBySelf, recovery.HoldByOtherChat, recovery.HoldByOtherProcess, "a hand-edited log"}
			held := recovery.Held{Reason: reasons[rng.IntN(len(reasons))], By: bys[rng.IntN(len(bys))]}
			ms := r.Delay.Milliseconds()
			f = &recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: &ms, Held: &held, Message: recovery.HoldMessage(held, "x-ratelimit-reset-requests")}
			r.Failure = f
			shared = rng.IntN(n + 1)
		}
		w := recovery.Wording{Retry: r, Continuing: rng.IntN(2) == 0, Model: "small", At: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Shared: shared}
		type state struct {
			name        string
			title, body string
			ended       bool
		}
		var states []state
		add := func(name string, ended bool, title, body string) {
			states = append(states, state{name, title, body, ended})
		}
		t1, b1 := w.Scheduled()
		add("scheduled", false, t1, b1)
		t2, b2 := w.Started()
		add("started", false, t2, b2)
		t3, b3 := w.Recovered()
		add("recovered", true, t3, b3)
		t4, b4 := w.Cancelled(false)
		add("cancelled waiting", true, t4, b4)
		t5, b5 := w.Cancelled(true)
		add("cancelled running", true, t5, b5)
		t6, b6 := w.Interrupted()
		add("interrupted", true, t6, b6)
		t7, b7 := w.GaveUp()
		add("gave up", true, t7, b7)
		// The give-up's card says how many retries it made, title and body
		// alike, and leaves the provider's words to the prompt's error.
		gave := strings.TrimPrefix(t7, w.Subject()+"; ")
		if gave == t7 || !strings.HasPrefix(gave, "gave up") || !strings.HasPrefix(b7, strings.ToUpper(gave[:1])+gave[1:]+";") ||
			!strings.Contains(gave, recovery.Retries(n-shared)) && (n != shared || !strings.Contains(gave, "without a retry")) || f != nil && f.Message != "" && strings.Contains(t7+b7, f.Message) {
			t.Fatalf("case %d gave up: %q / %q", i, t7, b7)
		}
		for _, s := range states {
			if s.body == "" || !strings.HasPrefix(s.title, w.Subject()) {
				t.Fatalf("case %d %s: title %q (subject %q), body %q", i, s.name, s.title, w.Subject(), s.body)
			}
			tc, bc := countRe.FindString(s.title), countRe.FindString(s.body)
			for _, c := range []string{tc, bc} {
				if c != "" && c != recovery.RetryOf(n, budget) {
					t.Fatalf("case %d %s: counts %q, want %q (retries, the policy's): %q / %q", i, s.name, c, recovery.RetryOf(n, budget), s.title, s.body)
				}
			}
			if tc != "" && bc != "" && tc != bc {
				t.Fatalf("case %d %s: the title counts %q, the body %q", i, s.name, tc, bc)
			}
			if r.Delay >= recovery.ClockAfter && (durations.MatchString(s.title) || durations.MatchString(s.body)) {
				t.Fatalf("case %d %s: a %v wait said as a duration: %q / %q", i, s.name, r.Delay, s.title, s.body)
			}
			if s.ended && (strings.Contains(s.body, "Retrying in") || strings.Contains(s.body, "until ") || strings.Contains(s.body, "Retrying at") || strings.Contains(strings.TrimPrefix(s.title, w.Subject()), " in ")) {
				t.Fatalf("case %d %s: an ended status speaks of a wait: %q / %q", i, s.name, s.title, s.body)
			}
		}
	}
}

// A shared wait says who reached the limit, when the request goes, and
// that every chat waits for it; it counts no retry.
func TestWording_Held(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	words := func(reason, by string, d time.Duration) recovery.Wording {
		held := recovery.Held{Reason: reason, By: by}
		ms := d.Milliseconds()
		f := &recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: &ms, RetryAfterSource: "x-ratelimit-reset-requests", Held: &held,
			Message: recovery.HoldMessage(held, "x-ratelimit-reset-requests")}
		return recovery.Wording{Retry: recovery.Retry{ID: "retry_1", N: 1, Delay: d, Failure: f, Policy: recovery.PolicyShared, PolicyN: 1}, At: at, Shared: 1}
	}
	type card struct{ title, body string }
	pair := func(t, b string) card { return card{t, b} }
	tests := []struct {
		name string
		got  card
		want card
	}{
		{"another chat's cooldown, waiting", pair(words(recovery.HoldCooldown, recovery.HoldByOtherChat, 8*time.Second).Scheduled()), card{
			"Rate limit hit by another chat, sending in 8.0s",
			"Sending the request in 8.0s, when the limit resets; every chat and Rebound process using this provider waits for it.\n\nWhat happened: another chat reached the provider's rate limit (x-ratelimit-reset-requests)"}},
		{"another process's, a long wait said as a clock time", pair(words(recovery.HoldCooldown, recovery.HoldByOtherProcess, time.Minute).Scheduled()), card{
			"Rate limit hit by another Rebound, sending at 12:01:00 UTC",
			"Sending the request at 12:01:00 UTC, when the limit resets; every chat and Rebound process using this provider waits for it.\n\nWhat happened: another Rebound process reached the provider's rate limit (x-ratelimit-reset-requests)"}},
		{"this chat's pacing", pair(words(recovery.HoldPacing, recovery.HoldBySelf, 2*time.Second).Scheduled()), card{
			"Rate limit nearly used up, sending in 2.0s",
			"Sending the request in 2.0s, spreading requests over what is left of the limit, which every chat and Rebound process using this provider shares.\n\nWhat happened: the provider's rate limit is nearly used up, as this chat learnt (x-ratelimit-reset-requests): requests are spread over what is left of it"}},
		{"started", pair(words(recovery.HoldCooldown, recovery.HoldByOtherChat, 8*time.Second).Started()), card{
			"Rate limit hit by another chat, sending now",
			"The wait is over; sending the request.\n\nWhat happened: another chat reached the provider's rate limit (x-ratelimit-reset-requests)"}},
		{"recovered", pair(words(recovery.HoldCooldown, recovery.HoldByOtherChat, 8*time.Second).Recovered()), card{
			"Rate limit hit by another chat, sent after the wait",
			"Sent after the wait.\n\nWhat happened: another chat reached the provider's rate limit (x-ratelimit-reset-requests)"}},
		{"cancelled waiting", pair(words(recovery.HoldCooldown, recovery.HoldByOtherChat, 8*time.Second).Cancelled(false)), card{
			"Rate limit hit by another chat, cancelled",
			"Cancelled during the wait; the request was not sent.\n\nWhat happened: another chat reached the provider's rate limit (x-ratelimit-reset-requests)"}},
		{"gave up after the wait: no retry", pair(words(recovery.HoldCooldown, recovery.HoldByOtherChat, 8*time.Second).GaveUp()), card{
			"Rate limit hit by another chat; gave up without a retry",
			"Gave up without a retry; the error below says why and what to do."}},
		{"interrupted", pair(words(recovery.HoldCooldown, "", 8*time.Second).Interrupted()), card{
			"Rate limit hit by another chat or Rebound, interrupted (Rebound stopped)",
			"Rebound stopped during the wait; the next prompt goes on from it.\n\nWhat happened: another chat or process reached the provider's rate limit (x-ratelimit-reset-requests)"}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
}

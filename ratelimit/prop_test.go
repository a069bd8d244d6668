package ratelimit

import (
	"fmt"
	"github.com/rs/zerolog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// said is one response as generated: its headers, and what they say.
type said struct {
	status int
	h      http.Header
	close  time.Duration // the provider said the bucket is closed this long (0: not)
	most   time.Duration // the longest wait or reset in it
}

// genResponse makes a response in the shape of one provider's rate-limit
// headers: OpenAI and Groq (x-ratelimit-*), Anthropic (anthropic-ratelimit-*,
// RFC 3339 resets), the IETF RateLimit header (both drafts), with or
// without a Retry-After form, on a 429, a 503, a 500 or a 200.
func genResponse(r *rand.Rand, now time.Time) said {
	s := said{status: []int{200, 200, 429, 429, 503, 500}[r.IntN(6)], h: http.Header{}}
	wait := func() time.Duration { return time.Duration(1+r.IntN(120_000)) * time.Millisecond }
	secs := func() time.Duration { return time.Duration(1+r.IntN(600)) * time.Second }
	whole := func(d time.Duration) time.Duration { return now.Add(d).Truncate(time.Second).Sub(now) } // what a date to the second says
	note := func(d time.Duration) { s.most = max(s.most, d) }
	var unknownResets []time.Duration // resets whose remaining count is not sent
	limit := func(remaining int, d time.Duration, set func(rem string, reset time.Duration)) {
		note(d)
		if remaining < 0 {
			unknownResets = append(unknownResets, d)
			set("", d)
			return
		}
		if remaining == 0 {
			s.close = max(s.close, d)
		}
		set(strconv.Itoa(remaining), d)
	}
	remaining := func() int { return []int{-1, 0, 0, 1, 3, 50, 5000}[r.IntN(7)] }
	for _, kind := range []string{"requests", "tokens"} {
		switch r.IntN(5) {
		case 0: // OpenAI, Groq: Go durations
			limit(remaining(), wait(), func(rem string, d time.Duration) {
				if rem != "" {
					s.h.Set("x-ratelimit-remaining-"+kind, rem)
				}
				s.h.Set("x-ratelimit-reset-"+kind, d.String())
			})
		case 1: // Anthropic: an RFC 3339 time, to the second
			limit(remaining(), whole(secs()), func(rem string, d time.Duration) {
				if rem != "" {
					s.h.Set("anthropic-ratelimit-"+kind+"-remaining", rem)
				}
				s.h.Set("anthropic-ratelimit-"+kind+"-reset", now.Add(d).Format(time.RFC3339))
			})
		case 2: // Cerebras-style suffix, seconds with a fraction
			limit(remaining(), wait(), func(rem string, d time.Duration) {
				if rem != "" {
					s.h.Set("x-ratelimit-remaining-"+kind+"-minute", rem)
				}
				s.h.Set("x-ratelimit-reset-"+kind+"-minute", strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
			})
		}
	}
	if r.IntN(4) == 0 { // the IETF header
		rem, d := []int{0, 0, 2, 40}[r.IntN(4)], secs()
		limit(rem, d, func(remS string, d time.Duration) {
			if r.IntN(2) == 0 {
				s.h.Set("RateLimit", fmt.Sprintf(`"default";r=%s;t=%d`, remS, int(d.Seconds())))
			} else {
				s.h.Set("RateLimit", fmt.Sprintf(`limit=100, remaining=%s, reset=%d`, remS, int(d.Seconds())))
			}
		})
	}
	asked := time.Duration(0)
	switch r.IntN(4) {
	case 0:
		asked = secs()
		s.h.Set("Retry-After", strconv.Itoa(int(asked.Seconds())))
	case 1:
		asked = wait()
		s.h.Set("retry-after-ms", strconv.FormatInt(asked.Milliseconds(), 10))
	case 2:
		asked = whole(secs())
		s.h.Set("Retry-After", now.Add(asked).UTC().Format(http.TimeFormat))
	}
	note(asked)
	if s.status == 429 || s.status == 503 {
		if asked > 0 {
			s.close = max(s.close, asked)
		} else if s.status == 429 {
			for _, d := range unknownResets { // a 429's resets without counts: the limits hit
				s.close = max(s.close, d)
			}
		}
	}
	return s
}

// TestHold_NeverOpensClosedNeverHoldsLonger: whatever sequence of provider
// responses a bucket learns (from several sessions and two processes),
// Hold keeps it closed until the latest close said since the last success,
// and never holds past the longest wait or reset any response gave, or
// (a slot of the release after a cooldown) MaxSpread from the Hold.
func TestHold_NeverOpensClosedNeverHoldsLonger(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 33))
		opts := Options{Log: zerolog.New(failOnWrite{t})}
		opts.Pacing = r.IntN(2) == 0
		regs := []*Registry{New(opts)}
		regs = append(regs, regs[0]) // two sessions of one process
		if r.IntN(3) == 0 {          // or two processes
			opts.Dir = t.TempDir()
			regs = []*Registry{New(opts), New(opts)}
		}
		now := t0
		var closedUntil, heldMost time.Time
		for step := range 12 {
			now = now.Add(time.Duration(r.IntN(30_000)) * time.Millisecond)
			s := genResponse(r, now)
			b := regs[r.IntN(2)].Bucket(endpoint, key, model)
			b.Learn(now, "s"+strconv.Itoa(r.IntN(3)), s.status, s.h)
			at := now.Add(s.close)
			switch {
			case s.status >= 200 && s.status < 300:
				closedUntil = at
				if s.close == 0 {
					closedUntil = time.Time{}
				}
			case at.After(closedUntil) && s.close > 0:
				closedUntil = at
			}
			if m := now.Add(s.most); m.After(heldMost) {
				heldMost = m
			}
			for range 3 {
				q := now.Add(time.Duration(r.IntN(20_000)) * time.Millisecond)
				h := regs[r.IntN(2)].Bucket(endpoint, key, model).Hold(q, "s"+strconv.Itoa(r.IntN(3)))
				if q.Before(closedUntil) && (h.Reason != recovery.HoldCooldown || h.Until.Before(closedUntil)) {
					t.Fatalf("seed %d step %d: closed until %v by %d %v (learnt at %v), Hold at %v = %+v", seed, step, closedUntil, s.status, s.h, now, q, h)
				}
				// A slot after a cooldown may go past it, never past
				// what the caller waits (MaxSpread).
				if h.Until.After(heldMost) && h.Until.After(q.Add(DefaultMaxSpread)) {
					t.Fatalf("seed %d step %d: Hold %+v past the longest wait said (%v) and past MaxSpread from %v", seed, step, h, heldMost, q)
				}
				if h != (recovery.Hold{}) && !h.Until.After(q) {
					t.Fatalf("seed %d step %d: Hold at %v is not a wait: %+v", seed, step, q, h)
				}
			}
		}
	}
}

// failOnWrite fails the test on any log line: the property's files are
// never damaged, so a warning is a bug.
type failOnWrite struct{ t *testing.T }

func (w failOnWrite) Write(p []byte) (int, error) {
	w.t.Errorf("unexpected log: %s", p)
	return len(p), nil
}

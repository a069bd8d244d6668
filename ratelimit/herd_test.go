package ratelimit

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/recovery"
)

// window is a provider's fixed-window limit, as the mock provider's
// bucket: at most limit requests per every, the window starting at the
// first request after the last one ended. Every answer says the limit, the
// count left and the time to the window's end; a refusal adds
// retry-after-ms.
type window struct {
	limit       int
	every       time.Duration
	start       time.Time
	used        int
	sentLimited bool // the limit's size is sent (x-ratelimit-limit-requests)
}

func (w *window) serve(now time.Time) (int, http.Header) {
	if w.start.IsZero() || !now.Before(w.start.Add(w.every)) {
		w.start, w.used = now, 0
	}
	reset := w.start.Add(w.every).Sub(now)
	status := http.StatusOK
	if w.used >= w.limit {
		status = http.StatusTooManyRequests
	} else {
		w.used++
	}
	h := http.Header{}
	if w.sentLimited {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(w.limit))
	}
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(w.limit-w.used))
	ms := strconv.FormatInt((reset + time.Millisecond - 1).Milliseconds(), 10) // rounded up, as the mock: never before the reset
	h.Set("x-ratelimit-reset-requests", ms+"ms")
	if status == http.StatusTooManyRequests {
		h.Set("retry-after-ms", ms)
	}
	return status, h
}

// TestHold_NoHerdAtTheReset: across generated schedules (requests from
// several sessions of one process or of several processes sharing a
// directory, arriving at random, against a fixed-window limit, each one
// held as the gate says, sent when its hold ends, and after a 429 tried
// again after the wait it gave, as the executor does), no more requests
// are sent in the first instant after a reset the gate knew of than the
// limit allows (when the provider said its size: without it, the gate
// spreads by DefaultMinSpacing and cannot know how many are allowed),
// every hold is within MaxSpread, and every request is answered within a
// bound.
func TestHold_NoHerdAtTheReset(t *testing.T) {
	const maxSpread = 10 * time.Minute
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 3333))
		w := &window{limit: 1 + r.IntN(5), every: time.Duration(1+r.IntN(20)) * time.Second, sentLimited: r.IntN(4) > 0}
		opts := Options{Log: zerolog.New(failOnWrite{t}), Pacing: r.IntN(2) == 0, MaxSpread: maxSpread,
			Jitter: func(d time.Duration) time.Duration { return time.Duration(r.Int64N(int64(d))) }}
		regs := []*Registry{New(opts)}
		if r.IntN(2) == 0 {
			opts.Dir = t.TempDir()
			regs = []*Registry{New(opts), New(opts), New(opts)}
		}
		// Requests: a first burst, then more during the windows after.
		n := 2 + r.IntN(20)
		type req struct {
			arrive, done time.Time
			reg          *Registry
			origin       string
			tries        int
		}
		reqs := make([]*req, n)
		for i := range reqs {
			at := t0
			if r.IntN(3) > 0 {
				at = t0.Add(time.Duration(r.Int64N(int64(3 * w.every))))
			}
			reqs[i] = &req{arrive: at, reg: regs[r.IntN(len(regs))], origin: "s" + strconv.Itoa(r.IntN(4))}
		}
		type event struct {
			at   time.Time
			send bool // the hold is over: send without asking again
			r    *req
		}
		var queue []event
		for _, q := range reqs {
			queue = append(queue, event{at: q.arrive, r: q})
		}
		var sent []time.Time
		resets := map[time.Time]int{} // a reset the gate was told of with the limit's size, and the size
		for steps := 0; len(queue) > 0; steps++ {
			if steps > 10_000 {
				t.Fatalf("seed %d: the schedule does not end", seed)
			}
			slices.SortStableFunc(queue, func(a, b event) int { return a.at.Compare(b.at) })
			e := queue[0]
			queue = queue[1:]
			b := e.r.reg.Bucket(endpoint, key, model)
			if !e.send {
				h := b.Hold(e.at, e.r.origin)
				if d := h.Until.Sub(e.at); d > maxSpread {
					t.Fatalf("seed %d: a hold of %v, past MaxSpread", seed, d)
				}
				if h.Until.After(e.at) {
					queue = append(queue, event{at: h.Until, send: true, r: e.r})
					continue
				}
			}
			sent = append(sent, e.at)
			e.r.tries++
			status, hdr := w.serve(e.at)
			b.Learn(e.at, e.r.origin, status, hdr)
			if hdr.Get("x-ratelimit-remaining-requests") == "0" && w.sentLimited {
				resets[w.start.Add(w.every)] = w.limit
			}
			if status == http.StatusOK {
				e.r.done = e.at
				continue
			}
			wait, _ := strconv.Atoi(hdr.Get("retry-after-ms"))
			queue = append(queue, event{at: e.at.Add(time.Duration(wait) * time.Millisecond), r: e.r})
		}
		for u, limit := range resets {
			first := 0
			for _, s := range sent {
				if !s.Before(u) && s.Before(u.Add(DefaultMinSpacing/2)) {
					first++
				}
			}
			if first > limit {
				t.Errorf("seed %d (%d per %v, limit said %v, %d requests): %d sent in the first instant after the reset at %v, more than %d",
					seed, w.limit, w.every, w.sentLimited, n, first, u.Sub(t0), limit)
			}
		}
		// Every request is answered within as many windows as there are
		// requests per request allowed, and a few spacings more.
		bound := time.Duration(n/w.limit+2)*max(w.every, DefaultMinSpacing) + time.Duration(n)*DefaultMinSpacing
		for i, q := range reqs {
			if q.done.IsZero() || q.done.Sub(q.arrive) > bound {
				t.Errorf("seed %d: request %d (arrived at %v) answered after %v, past %v (%d tries)", seed, i, q.arrive.Sub(t0), q.done.Sub(q.arrive), bound, q.tries)
			}
		}
	}
}

// TestHold_ReleaseByWindows: 8 requests held on a 429 of a 4-request
// limit, from two processes: 4 go at the reset, 4 a window (and a spread)
// later; a slot past MaxSpread is brought forward to it; a cooldown past
// MaxSpread gives no slot.
func TestHold_ReleaseByWindows(t *testing.T) {
	a, b, _ := shared(t, Options{MaxSpread: 30 * time.Second})
	a.Bucket(endpoint, key, model).Learn(t0, "s1", 429, hdr("x-ratelimit-limit-requests", "4", "x-ratelimit-remaining-requests", "0",
		"x-ratelimit-reset-requests", "10s", "retry-after-ms", "10000"))
	until, next := t0.Add(10*time.Second), t0.Add(20*time.Second+DefaultMinSpacing)
	for i := range 8 {
		reg := []*Registry{a, b}[i%2]
		got := reg.Bucket(endpoint, key, model).Hold(t0.Add(time.Second), "s"+strconv.Itoa(i))
		want := until
		if i >= 4 {
			want = next
		}
		if got.Until != want || got.Reason != recovery.HoldCooldown {
			t.Errorf("held request %d: %+v, want until %v", i, got, want.Sub(t0))
		}
	}
	// After the reset, a request counts against the window the release
	// fills: the next one after the second batch.
	if got := a.Bucket(endpoint, key, model).Hold(until.Add(time.Second), "s9"); got.Until != next.Add(10*time.Second+DefaultMinSpacing) {
		t.Errorf("a request after the reset: %+v", got)
	}

	c := memBucket(Options{MaxSpread: 15 * time.Second})
	c.Learn(t0, "s1", 429, hdr("x-ratelimit-limit-requests", "1", "x-ratelimit-reset-requests", "10s", "retry-after-ms", "10000"))
	c.Hold(t0, "s1")
	if got := c.Hold(t0, "s2"); got.Until != t0.Add(15*time.Second) {
		t.Errorf("a slot past MaxSpread: %+v, want brought forward to it", got)
	}
	d := memBucket(Options{MaxSpread: 5 * time.Second})
	d.Learn(t0, "s1", 429, hdr("retry-after-ms", "10000"))
	if got := d.Hold(t0, "s2"); got.Until != t0.Add(10*time.Second) {
		t.Errorf("a cooldown past MaxSpread: %+v, want its end (the caller gives up)", got)
	}
	if d.mem.Release != nil {
		t.Errorf("a cooldown past MaxSpread gave a slot: %+v", d.mem.Release)
	}
}

// TestLearn_StaleSuccessKeepsClosed: answers to requests sent together
// come back in any order; one that used an earlier slot of the window a
// count at 0 closed (requests left, the same reset) does not reopen it. A
// success from the next window does.
func TestLearn_StaleSuccessKeepsClosed(t *testing.T) {
	b := memBucket(Options{})
	b.Learn(t0, "s1", 200, hdr("x-ratelimit-limit-requests", "4", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "10s"))
	b.Learn(t0.Add(50*time.Millisecond), "s2", 200, hdr("x-ratelimit-limit-requests", "4", "x-ratelimit-remaining-requests", "2", "x-ratelimit-reset-requests", "9.95s"))
	if h := b.Hold(t0.Add(time.Second), "s3"); h.Until != t0.Add(10*time.Second) {
		t.Errorf("after a late answer from the closed window: %+v, want held to the reset", h)
	}
	b.Learn(t0.Add(10100*time.Millisecond), "s2", 200, hdr("x-ratelimit-limit-requests", "4", "x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "10s"))
	if b.mem.Cooldown != nil {
		t.Errorf("a success from the next window left the bucket closed: %+v", b.mem.Cooldown)
	}
}

// TestHold_ReleaseWindowIsTheLongestReset: a 429 late in a window says
// little of the window's length; the release spreads by the longest reset
// the limit has said.
func TestHold_ReleaseWindowIsTheLongestReset(t *testing.T) {
	b := memBucket(Options{MaxSpread: time.Minute})
	b.Learn(t0, "s1", 200, hdr("x-ratelimit-limit-requests", "1", "x-ratelimit-remaining-requests", "1", "x-ratelimit-reset-requests", "10s"))
	b.Learn(t0.Add(9*time.Second), "s1", 429, hdr("x-ratelimit-limit-requests", "1", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s", "retry-after-ms", "1000"))
	b.Hold(t0.Add(9*time.Second), "s2")
	if h := b.Hold(t0.Add(9*time.Second), "s3"); h.Until != t0.Add(20*time.Second+DefaultMinSpacing) {
		t.Errorf("the second held: %+v, want a 10 s window (and a spread) after the reset", h)
	}
}

package ratelimit

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/recovery"
)

// holdBefore and learnBefore are Hold and Learn as they were before they
// were split into named steps, kept while the refactor is checked against
// them.
func (b *Bucket) holdBefore(now time.Time, origin string) recovery.Hold {
	var h recovery.Hold
	b.update(now, func(s *state) bool {
		closed, reason := s.Cooldown, recovery.HoldCooldown
		if closed != nil && !now.Before(closed.Until) {
			closed = nil
		}
		p := s.Pace
		if p != nil && (!b.r.opts.Pacing || !now.Before(p.Reset)) {
			p = nil
		}
		if closed == nil && p != nil && (p.Remaining < 1 || !p.Next.Before(p.Reset)) { // the slots given since the provider's count used it up
			closed = &mark{Until: p.Reset, Source: p.Source, Limit: p.Limit, Window: p.Window, by: p.by}
			reason = recovery.HoldPacing
		}
		if closed != nil {
			h = recovery.Hold{Until: closed.Until, Reason: reason, By: b.who(closed.by, origin), Source: closed.Source}
			if closed.Until.Sub(now) > b.r.opts.MaxSpread {
				return false // too long to wait: the caller gives up, and sends nothing
			}
			if r := s.Release; r == nil || !r.Start.Equal(closed.Until) {
				s.Release = b.newRelease(closed, reason == recovery.HoldPacing, s.Release)
			}
		}
		// Open, a release counts its slots from its start on; before it
		// (a success reopened the bucket early) requests go, and the slots
		// it gave are kept: they are requests on their way.
		if r := s.Release; closed != nil || r != nil && !now.Before(r.Start) && now.Before(r.end()) {
			r = s.Release
			if at := b.slot(r, now); at.After(now) {
				reason := recovery.HoldCooldown
				if r.Pacing {
					reason = recovery.HoldPacing
				}
				h = recovery.Hold{Until: at, Reason: reason, By: b.who(r.by, origin), Source: r.Source}
			}
			return true
		}
		if p == nil {
			return false
		}
		at := now
		if p.Next.After(now) {
			at = p.Next
			h = recovery.Hold{Until: at, Reason: recovery.HoldPacing, By: b.who(p.by, origin), Source: p.Source}
		}
		spacing := time.Duration(float64(p.Reset.Sub(at)) / p.Remaining)
		p.Remaining--
		if spacing >= b.r.opts.MinSpacing {
			p.Next = at.Add(spacing)
		}
		return true
	})
	return h
}

func (b *Bucket) learnBefore(now time.Time, origin string, status int, h http.Header) {
	limits := recovery.ResponseLimits(h, now)
	l := by{Process: b.r.process, Origin: origin}
	var closeAt time.Time
	var source string
	byCount := false // the close is a count at 0, not a refusal's wait
	closeBy := func(d time.Duration, src string) bool {
		if at := now.Add(min(d, MaxHold)); d > 0 && at.After(closeAt) {
			closeAt, source, byCount = at, src, false
			return true
		}
		return false
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if d, src, ok := recovery.HeaderWait(status, h, now); ok {
			closeBy(d, src)
		}
	}
	var np *pace
	// The tightest request limit whose size the provider said: its size
	// and its reset (the window, at its longest) spread a release.
	size, window := 0.0, time.Duration(0)
	for _, lim := range limits {
		if lim.Requests && lim.Limit >= 1 && (size == 0 || lim.Limit < size) {
			size, window = lim.Limit, min(lim.Reset, MaxHold)
		}
	}
	// A success dated by its own count to the window a count at 0 closed
	// (requests left, and a reset within a second of the close's end) was
	// sent before the close and answered after it: it reopens nothing.
	stale := func(c *mark) bool {
		if !c.Count {
			return false
		}
		for _, lim := range limits {
			if lim.Requests && lim.Known && lim.Remaining >= 1 && lim.Reset > 0 && !now.Add(lim.Reset).After(c.Until.Add(time.Second)) {
				return true
			}
		}
		return false
	}
	for _, lim := range limits {
		switch {
		case lim.Known && lim.Remaining < 1:
			if closeBy(lim.Reset, lim.Source) {
				byCount = true
			}
		// Token limits are not paced: whether the next request fits in
		// the tokens left depends on its size as the provider counts it
		// (the prompt, and max_tokens reserved up front), which the gate
		// is not told and cannot judge before the request is sent. At 0
		// they close the bucket like any limit (the case above).
		case lim.Known && lim.Requests && lim.Reset > 0 && nearlyEmpty(lim):
			// The tightest request limit sets the pace: the most time per
			// request left.
			p := &pace{Reset: now.Add(min(lim.Reset, MaxHold)), Remaining: lim.Remaining, Limit: size, Window: max(min(lim.Reset, MaxHold), window), Source: lim.Source, by: l}
			if np == nil || float64(p.Reset.Sub(now))/p.Remaining > float64(np.Reset.Sub(now))/np.Remaining {
				np = p
			}
		}
	}
	success := status >= 200 && status < 300
	if closeAt.IsZero() && np == nil && !success && window == 0 {
		return // nothing learnt: no need to touch the file
	}
	b.update(now, func(s *state) bool {
		changed := false
		if window > s.Window {
			s.Window, changed = window, true
		}
		if success && s.Cooldown != nil && !stale(s.Cooldown) {
			s.Cooldown, changed = nil, true
		}
		if !closeAt.IsZero() && (s.Cooldown == nil || closeAt.After(s.Cooldown.Until)) {
			s.Cooldown, changed = &mark{Until: closeAt, Source: source, Count: byCount, Limit: size, Window: max(closeAt.Sub(now), s.Window), by: l}, true
		}
		if np != nil {
			if old := s.Pace; old != nil && now.Before(old.Reset) {
				np.Next = minTime(old.Next, np.Reset) // a slot given stays given
			}
			s.Pace, changed = np, true
		}
		return changed
	})
}

// Hold and Learn do what they did before their refactor: two worlds, one
// with the new methods and one with the old, each two processes sharing a
// bucket file, are told the same generated responses and asked the same
// holds (several sessions, with and without pacing, with a short or long
// MaxSpread), and must give the same holds and write the same files.
func TestBucket_SameAsBefore(t *testing.T) {
	for seed := range uint64(80) {
		r := rand.New(rand.NewPCG(seed, 30))
		opts := Options{Log: zerolog.New(failOnWrite{t}), Pacing: r.IntN(3) > 0}
		if r.IntN(3) == 0 {
			opts.MaxSpread = time.Duration(1+r.IntN(60)) * time.Second
		}
		world := func() [2]*Bucket {
			opts.Dir = t.TempDir()
			var w [2]*Bucket
			for i := range w {
				reg := New(opts)
				reg.process = "p" + strconv.Itoa(i)
				w[i] = reg.Bucket(endpoint, key, model)
			}
			return w
		}
		after, before := world(), world()
		now := t0
		for step := range 30 {
			now = now.Add(time.Duration(r.IntN(20_000)) * time.Millisecond)
			i, origin := r.IntN(2), "s"+strconv.Itoa(r.IntN(3))
			if r.IntN(2) == 0 {
				s := genResponse(r, now)
				if r.IntN(4) == 0 {
					s.h.Set("x-ratelimit-limit-requests", strconv.Itoa([]int{1, 4, 100}[r.IntN(3)]))
				}
				after[i].Learn(now, origin, s.status, s.h)
				before[i].learnBefore(now, origin, s.status, s.h)
			} else {
				got, want := after[i].Hold(now, origin), before[i].holdBefore(now, origin)
				if got != want {
					t.Fatalf("seed %d step %d: Hold = %+v, before %+v", seed, step, got, want)
				}
			}
			a, errA := os.ReadFile(after[i].file)
			b, errB := os.ReadFile(before[i].file)
			if !bytes.Equal(a, b) || (errA == nil) != (errB == nil) || !reflect.DeepEqual(after[i].mem, before[i].mem) {
				t.Fatalf("seed %d step %d: state\n%s\nbefore\n%s", seed, step, a, b)
			}
		}
	}
}


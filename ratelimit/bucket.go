package ratelimit

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// Bucket is one provider bucket's shared state. It implements
// recovery.Gate and is safe for concurrent use.
type Bucket struct {
	r    *Registry
	id   string
	file string        // the state file; "" keeps state in memory only
	sem  chan struct{} // in-process in-flight slots; nil without a cap

	mu     sync.Mutex
	mem    state // the last state read or written; the state when the file fails
	warned bool  // a failing file was warned about; cleared when it works again
}

var _ recovery.Gate = (*Bucket)(nil)

func newBucket(r *Registry, id string) *Bucket {
	b := &Bucket{r: r, id: id, file: r.path(id, ".json")}
	if n := r.opts.MaxInFlight; n > 0 {
		b.sem = make(chan struct{}, n)
	}
	return b
}

// state is what a bucket knows, as written in its file. It holds no
// secret: times, counts, header names, random process ids and session ids.
type state struct {
	V        int   `json:"v"`
	Cooldown *mark `json:"cooldown,omitempty"`
	Pace     *pace `json:"pace,omitempty"`
}

// by is who learnt a fact.
type by struct {
	Process string `json:"process"` // Registry.process
	Origin  string `json:"origin"`  // the session
}

// mark: the provider said nothing is served before Until.
type mark struct {
	Until  time.Time `json:"until"`
	Source string    `json:"source"`
	by
}

// pace: Remaining requests are left until Reset; the next may go at Next.
type pace struct {
	Reset     time.Time `json:"reset"`
	Remaining float64   `json:"remaining"`
	Next      time.Time `json:"next"`
	Source    string    `json:"source"`
	by
}

const stateVersion = 1

// Hold implements recovery.Gate. Pacing hands out slots: each call is
// taken to be followed by a request, sent now (a zero Hold) or at Until
// (a pacing Hold), so callers that ask together are given successive
// slots, never one and the same. A cooldown is no slot: every caller is
// held until it ends.
func (b *Bucket) Hold(now time.Time, origin string) recovery.Hold {
	var h recovery.Hold
	b.update(now, func(s *state) bool {
		if c := s.Cooldown; c != nil && now.Before(c.Until) {
			h = recovery.Hold{Until: c.Until, Reason: recovery.HoldCooldown, By: b.who(c.by, origin), Source: c.Source}
			return false
		}
		p := s.Pace
		if !b.r.opts.Pacing || p == nil || !now.Before(p.Reset) {
			return false
		}
		if p.Remaining < 1 { // the slots given since the provider's count used it up
			h = recovery.Hold{Until: p.Reset, Reason: recovery.HoldPacing, By: b.who(p.by, origin), Source: p.Source}
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

// who says who learnt a fact, as seen from origin in this process.
func (b *Bucket) who(l by, origin string) string {
	switch {
	case l.Process != b.r.process:
		return recovery.HoldByOtherProcess
	case l.Origin != origin:
		return recovery.HoldByOtherChat
	}
	return recovery.HoldBySelf
}

// Learn implements recovery.Gate: a 429 or 503 with a wait, or a limit
// whose remaining count is 0, closes the bucket until then (a later close
// is never shortened but by a success); a 2xx reopens it; the request
// limits' remaining counts set the pace.
func (b *Bucket) Learn(now time.Time, origin string, status int, h http.Header) {
	limits := recovery.ResponseLimits(h, now)
	l := by{Process: b.r.process, Origin: origin}
	var closeAt time.Time
	var source string
	closeBy := func(d time.Duration, src string) {
		if at := now.Add(min(d, MaxHold)); d > 0 && at.After(closeAt) {
			closeAt, source = at, src
		}
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if d, src, ok := recovery.HeaderWait(status, h, now); ok {
			closeBy(d, src)
		}
	}
	var np *pace
	for _, lim := range limits {
		switch {
		case lim.Known && lim.Remaining < 1:
			closeBy(lim.Reset, lim.Source)
		case lim.Known && lim.Requests && lim.Reset > 0 && nearlyEmpty(lim):
			// The tightest request limit sets the pace: the most time per
			// request left.
			p := &pace{Reset: now.Add(min(lim.Reset, MaxHold)), Remaining: lim.Remaining, Source: lim.Source, by: l}
			if np == nil || float64(p.Reset.Sub(now))/p.Remaining > float64(np.Reset.Sub(now))/np.Remaining {
				np = p
			}
		}
	}
	success := status >= 200 && status < 300
	if closeAt.IsZero() && np == nil && !success {
		return // nothing learnt: no need to touch the file
	}
	b.update(now, func(s *state) bool {
		changed := false
		if success && s.Cooldown != nil {
			s.Cooldown, changed = nil, true
		}
		if !closeAt.IsZero() && (s.Cooldown == nil || closeAt.After(s.Cooldown.Until)) {
			s.Cooldown, changed = &mark{Until: closeAt, Source: source, by: l}, true
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

// PaceBelow is the fraction of a limit below which its requests are paced,
// when the provider says the limit's size: with a 4-request window, from
// the last request left; with 500 a minute, from 125. Above it, the
// requests left are spent as they come: spreading them would only delay
// requests the window has room for.
const PaceBelow = 0.25

// nearlyEmpty: few enough of lim's requests are left to pace them. Without
// the limit's size, the spacing (DefaultMinSpacing) alone decides.
func nearlyEmpty(lim recovery.Limit) bool {
	return lim.Limit <= 0 || lim.Remaining <= PaceBelow*lim.Limit
}

// Acquire implements recovery.Gate (inflight.go).
func (b *Bucket) Acquire(ctx context.Context) (func(), error) { return b.acquire(ctx) }

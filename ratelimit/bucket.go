package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// Bucket is one provider bucket's shared state. It implements
// recovery.Gate and is safe for concurrent use.
type Bucket struct {
	r        *Registry
	id       string
	file     string // the state file; "" keeps state in memory only
	inflight slots  // the cap on requests in flight (inflight.go)

	mu     sync.Mutex
	mem    state // the last state read or written; the state when the file fails
	warned bool  // a failing file was warned about; cleared when it works again
}

var _ recovery.Gate = (*Bucket)(nil)

func newBucket(r *Registry, id string) *Bucket {
	b := &Bucket{r: r, id: id, file: r.path(id, ".json")}
	b.inflight = newSlots(r.opts, id, b.file != "")
	return b
}

// state is what a bucket knows, as written in its file. It holds no
// secret: times, counts, header names, random process ids and session ids.
type state struct {
	V        int      `json:"v"`
	Cooldown *mark    `json:"cooldown,omitempty"`
	Pace     *pace    `json:"pace,omitempty"`
	Release  *release `json:"release,omitempty"`
	// Window is the longest reset the tightest request limit has said:
	// its window, as far as one can tell (a 429 late in a window says
	// less).
	Window time.Duration `json:"window,omitempty"`
}

// by is who learnt a fact.
type by struct {
	Process string `json:"process"` // Registry.process
	Origin  string `json:"origin"`  // the session
}

// mark: the provider said nothing is served before Until. Limit is the
// size of the request limit that closed it, when the provider said it
// (x-ratelimit-limit-requests), and Window the time from the refusal to
// Until: what the release after Until is spread by.
type mark struct {
	Until  time.Time     `json:"until"`
	Source string        `json:"source"`
	Count  bool          `json:"count,omitempty"` // closed by a remaining count at 0, not a refusal
	Limit  float64       `json:"limit,omitempty"`
	Window time.Duration `json:"window,omitempty"`
	by
}

// release spreads the requests held on a cooldown over the time after it
// ends (the thundering herd at the reset): the k-th request held is given
// slot k, sent at Start + (k / per) * every, plus a jitter under spread.
// With the limit's size known, per is that size and every the cooldown's
// window (and a spread): a new window's worth at the reset, the next one a window later,
// never more in one window than the provider allows. Without it, per is 1
// and every the minimum spacing. It stays in force (slots are counted, also
// for requests that come after the reset) until its last slot has passed,
// and a later cooldown carries over the slots it has given that land after
// its own end.
type release struct {
	Start  time.Time     `json:"start"`
	Per    int           `json:"per"`
	Every  time.Duration `json:"every"`
	Spread time.Duration `json:"spread"`
	Given  int           `json:"given"`
	Pacing bool          `json:"pacing,omitempty"` // it follows a paced window used up, not a refusal
	Source string        `json:"source"`
	by
}

// base is slot k's time before jitter.
func (r *release) base(k int) time.Time {
	n := time.Duration(k / r.Per)
	if n > MaxHold/r.Every { // no overflow: past MaxHold is as far as a hold goes
		return r.Start.Add(MaxHold)
	}
	return r.Start.Add(n * r.Every)
}

// end is when the release stops counting: when the last slot given has
// passed, and not before the first window after the reset has (the
// requests that come in it count against the same window as those held).
func (r *release) end() time.Time {
	end := r.Start.Add(r.Every)
	if r.Given > 0 {
		end = maxTime(end, r.base(r.Given-1).Add(r.Spread))
	}
	return end
}

// landingFrom counts the slots given that may land at or after t, jitter
// included.
func (r *release) landingFrom(t time.Time) int {
	d := t.Sub(r.Start.Add(r.Spread)) // batch b lands before t when b*Every < d
	if d <= 0 {
		return r.Given
	}
	before := int((d+r.Every-1)/r.Every) * r.Per // the slots of the batches that land before t
	return max(0, r.Given-before)
}

// pace: Remaining requests are left until Reset; the next may go at Next.
// Limit and Window are as a mark's, for the release after Reset.
type pace struct {
	Reset     time.Time     `json:"reset"`
	Remaining float64       `json:"remaining"`
	Next      time.Time     `json:"next"`
	Limit     float64       `json:"limit,omitempty"`
	Window    time.Duration `json:"window,omitempty"`
	Source    string        `json:"source"`
	by
}

const stateVersion = 1

// Hold implements recovery.Gate. It hands out slots: each call is taken
// to be followed by a request, sent now (a zero Hold) or at Until, so
// callers that ask together are given successive slots, never one and the
// same. Pacing spreads the requests left of a window to its reset; a
// closed bucket (a cooldown, or a paced window used up) holds its callers
// until it reopens and then releases them a window's worth at a time
// (release), so that they do not all hit the new window at once and are
// refused again.
func (b *Bucket) Hold(now time.Time, origin string) recovery.Hold {
	var h recovery.Hold
	b.update(now, func(s *state) bool {
		var changed bool
		h, changed = b.hold(s, now, origin)
		return changed
	})
	return h
}

// hold is Hold on state s, reporting whether it changed s.
func (b *Bucket) hold(s *state, now time.Time, origin string) (h recovery.Hold, changed bool) {
	p := s.Pace
	if p != nil && (!b.r.opts.Pacing || !now.Before(p.Reset)) {
		p = nil
	}
	closed, reason := closing(s, p, now)
	if closed != nil {
		h = recovery.Hold{Until: closed.Until, Reason: reason, By: b.who(closed.by, origin), Source: closed.Source}
		if closed.Until.Sub(now) > b.r.opts.MaxSpread {
			return h, false // too long to wait: the caller gives up, and sends nothing
		}
		if r := s.Release; r == nil || !r.Start.Equal(closed.Until) {
			s.Release = b.newRelease(closed, reason == recovery.HoldPacing, s.Release)
		}
	}
	// Open, a release counts its slots from its start on; before it
	// (a success reopened the bucket early) requests go, and the slots
	// it gave are kept: they are requests on their way.
	if r := s.Release; closed != nil || r != nil && !now.Before(r.Start) && now.Before(r.end()) {
		if at := b.slot(r, now); at.After(now) {
			h = recovery.Hold{Until: at, Reason: r.reason(), By: b.who(r.by, origin), Source: r.Source}
		}
		return h, true
	}
	if p == nil {
		return h, false
	}
	return b.paceSlot(p, now, origin), true
}

// closing is what closes the bucket at now, and why: its cooldown, or
// the window p paces used up by the slots given since the provider's
// count; nil when it is open.
func closing(s *state, p *pace, now time.Time) (*mark, string) {
	if c := s.Cooldown; c != nil && now.Before(c.Until) {
		return c, recovery.HoldCooldown
	}
	if p != nil && (p.Remaining < 1 || !p.Next.Before(p.Reset)) {
		return &mark{Until: p.Reset, Source: p.Source, Limit: p.Limit, Window: p.Window, by: p.by}, recovery.HoldPacing
	}
	return nil, ""
}

// reason is why a slot of r holds its caller.
func (r *release) reason() string {
	if r.Pacing {
		return recovery.HoldPacing
	}
	return recovery.HoldCooldown
}

// paceSlot gives p's next slot: now, or its Next when that is later (a
// hold), and moves Next on by the time left per request left.
func (b *Bucket) paceSlot(p *pace, now time.Time, origin string) recovery.Hold {
	var h recovery.Hold
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
	return h
}

// newRelease is the release after cooldown c, carrying over the slots old
// gave that land after c ends.
func (b *Bucket) newRelease(c *mark, pacing bool, old *release) *release {
	spacing := max(b.r.opts.MinSpacing, time.Millisecond)
	r := &release{Start: c.Until, Per: 1, Every: spacing, Pacing: pacing, Source: c.Source, by: c.by}
	r.Spread = spacing
	if c.Limit >= 1 {
		// A window, and the jitter of the batch before: the provider's
		// window starts with a batch's first request, up to Spread late.
		r.Per, r.Every = int(min(c.Limit, maxPer)), min(max(c.Window, spacing), MaxHold)+r.Spread
	}
	if old != nil {
		r.Given = old.landingFrom(c.Until)
	}
	return r
}

// maxPer bounds a limit's size as a batch (a file or provider that says
// 10^12 requests is saying "no limit worth spreading").
const maxPer = 1 << 20

// slot gives r's next slot: its time with jitter, never earlier than
// Start. A slot further than MaxSpread from now (the wait the caller would
// give up on) is not given: the caller is held MaxSpread, the most it
// waits, and its request is sent then, outside the release (it may be
// refused, and retried as recovery says), leaving the slot to a later one.
func (b *Bucket) slot(r *release, now time.Time) time.Time {
	at := r.base(r.Given).Add(b.jitter(r, r.Given))
	if limit := now.Add(b.r.opts.MaxSpread); at.After(limit) {
		return maxTime(limit, r.Start)
	}
	r.Given++
	return maxTime(at, r.Start)
}

// jitter is slot k's full jitter, in [0, r.Spread): a hash of the
// release and k, evenly spread like a random draw, but the same for the
// same slot in every process (the slot is given once, whoever asks) and
// from one run to the next on the same clock (transcripts pin it).
func (b *Bucket) jitter(r *release, k int) time.Duration {
	d := r.Spread
	if d <= 0 {
		return 0
	}
	if f := b.r.opts.Jitter; f != nil {
		return max(0, min(f(d), d-1))
	}
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], uint64(r.Start.UnixNano()))
	binary.LittleEndian.PutUint64(buf[8:], uint64(k))
	h := sha256.Sum256(buf[:])
	return time.Duration(binary.LittleEndian.Uint64(h[:8]) % uint64(d))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
	f := learn(now, status, h, by{Process: b.r.process, Origin: origin})
	if f.closeAt.IsZero() && f.pace == nil && !f.success && f.window == 0 {
		return // nothing learnt: no need to touch the file
	}
	b.update(now, f.apply)
}

// learnt is what one response says of its bucket, read before the
// bucket's state is.
type learnt struct {
	now     time.Time
	by      by
	success bool
	limits  []recovery.Limit
	closeAt time.Time // the bucket is closed until then; zero when not
	source  string    // the header that said so
	byCount bool      // the close is a count at 0, not a refusal's wait
	// The tightest request limit whose size the provider said: its size
	// and its reset (the window, at its longest) spread a release.
	size   float64
	window time.Duration
	pace   *pace // the pace the response sets; nil when none
}

// learn reads what a response with status and headers h, answered at now,
// says of its bucket.
func learn(now time.Time, status int, h http.Header, l by) *learnt {
	f := &learnt{now: now, by: l, success: status >= 200 && status < 300, limits: recovery.ResponseLimits(h, now)}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if d, src, ok := recovery.HeaderWait(status, h, now); ok {
			f.closeBy(d, src)
		}
	}
	f.size, f.window = tightestRequestLimit(f.limits)
	for _, lim := range f.limits {
		switch {
		case lim.Known && lim.Remaining < 1:
			if f.closeBy(lim.Reset, lim.Source) {
				f.byCount = true
			}
		// Token limits are not paced: whether the next request fits in
		// the tokens left depends on its size as the provider counts it
		// (the prompt, and max_tokens reserved up front), which the gate
		// is not told and cannot judge before the request is sent. At 0
		// they close the bucket like any limit (the case above).
		case lim.Known && lim.Requests && lim.Reset > 0 && nearlyEmpty(lim):
			f.paceBy(lim)
		}
	}
	return f
}

// tightestRequestLimit is the size and reset (at most MaxHold) of the
// smallest request limit whose size is said; 0 when none is.
func tightestRequestLimit(limits []recovery.Limit) (size float64, window time.Duration) {
	for _, lim := range limits {
		if lim.Requests && lim.Limit >= 1 && (size == 0 || lim.Limit < size) {
			size, window = lim.Limit, min(lim.Reset, MaxHold)
		}
	}
	return size, window
}

// closeBy closes the bucket for d (at most MaxHold) when that ends later
// than the close so far, reporting whether it did.
func (f *learnt) closeBy(d time.Duration, src string) bool {
	if at := f.now.Add(min(d, MaxHold)); d > 0 && at.After(f.closeAt) {
		f.closeAt, f.source, f.byCount = at, src, false
		return true
	}
	return false
}

// paceBy paces by request limit lim when it gives more time per request
// left than the pace so far: the tightest limit sets the pace.
func (f *learnt) paceBy(lim recovery.Limit) {
	reset := min(lim.Reset, MaxHold)
	p := &pace{Reset: f.now.Add(reset), Remaining: lim.Remaining, Limit: f.size, Window: max(reset, f.window), Source: lim.Source, by: f.by}
	if np := f.pace; np == nil || float64(p.Reset.Sub(f.now))/p.Remaining > float64(np.Reset.Sub(f.now))/np.Remaining {
		f.pace = p
	}
}

// stale: a success dated by its own count to the window a count at 0
// closed (requests left, and a reset within a second of the close's end)
// was sent before the close and answered after it: it reopens nothing.
func (f *learnt) stale(c *mark) bool {
	if !c.Count {
		return false
	}
	for _, lim := range f.limits {
		if lim.Requests && lim.Known && lim.Remaining >= 1 && lim.Reset > 0 && !f.now.Add(lim.Reset).After(c.Until.Add(time.Second)) {
			return true
		}
	}
	return false
}

// apply writes what was learnt into the bucket's state s, reporting
// whether it changed it.
func (f *learnt) apply(s *state) bool {
	changed := false
	if f.window > s.Window {
		s.Window, changed = f.window, true
	}
	if f.success && s.Cooldown != nil && !f.stale(s.Cooldown) {
		s.Cooldown, changed = nil, true
	}
	if !f.closeAt.IsZero() && (s.Cooldown == nil || f.closeAt.After(s.Cooldown.Until)) {
		s.Cooldown, changed = &mark{Until: f.closeAt, Source: f.source, Count: f.byCount, Limit: f.size, Window: max(f.closeAt.Sub(f.now), s.Window), by: f.by}, true
	}
	if f.pace != nil {
		if old := s.Pace; old != nil && f.now.Before(old.Reset) {
			f.pace.Next = minTime(old.Next, f.pace.Reset) // a slot given stays given
		}
		s.Pace, changed = f.pace, true
	}
	return changed
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
func (b *Bucket) Acquire(ctx context.Context) (func(), error) { return b.inflight.acquire(ctx) }

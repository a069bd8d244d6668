package testkit

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// Gate is a scripted recovery.Gate for tests (the real one is package
// ratelimit's): Hold hands out Holds in turn, each ending its For after
// the time asked, then the zero Hold; Acquire gives at most Slots requests
// in flight (0: no cap). It records what it was asked and told.
type Gate struct {
	Holds []GateHold
	Slots int

	mu       sync.Mutex
	free     chan struct{} // a token per free slot, made on first use
	asked    []string      // the origin of each Hold
	inFlight int
	most     int // the most in flight at once
	learnt   []int
}

// GateHold is a Hold relative to when it is asked.
type GateHold struct {
	For                time.Duration
	Reason, By, Source string
}

var _ recovery.Gate = (*Gate)(nil)

// Hold returns the next scripted hold.
func (g *Gate) Hold(now time.Time, origin string) recovery.Hold {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, origin)
	if len(g.Holds) == 0 {
		return recovery.Hold{}
	}
	h := g.Holds[0]
	g.Holds = g.Holds[1:]
	return recovery.Hold{Until: now.Add(h.For), Reason: h.Reason, By: h.By, Source: h.Source}
}

// Acquire takes a slot, waiting for one when Slots are all taken.
func (g *Gate) Acquire(ctx context.Context) (func(), error) {
	g.mu.Lock()
	if g.Slots > 0 && g.free == nil {
		g.free = make(chan struct{}, g.Slots)
		for range g.Slots {
			g.free <- struct{}{}
		}
	}
	free := g.free
	g.mu.Unlock()
	if free != nil {
		select {
		case <-free:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.inFlight--
			g.mu.Unlock()
			if free != nil {
				free <- struct{}{}
			}
		})
	}, nil
}

// Learn records the status it is told.
func (g *Gate) Learn(now time.Time, origin string, status int, h http.Header) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.learnt = append(g.learnt, status)
}

// Asked is the origin of each Hold asked so far.
func (g *Gate) Asked() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.asked...)
}

// InFlight is how many slots are taken now, and the most ever taken at once.
func (g *Gate) InFlight() (now, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, g.most
}

// Learnt is the status of each response the gate was told.
func (g *Gate) Learnt() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.learnt...)
}

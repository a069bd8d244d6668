package recovery

import (
	"context"
	"net/http"
	"time"
)

// Gate is the shared state of the provider bucket a request goes to
// (package ratelimit implements it): a time before which nothing should be
// sent, and a cap on requests in flight. Every session and process sending to
// the bucket shares it. Nil means no gate.
type Gate interface {
	// Hold says until when a request from origin should wait before being
	// sent, and why; the zero Hold means send now.
	Hold(now time.Time, origin string) Hold
	// Acquire takes one of the bucket's in-flight slots, waiting until one is
	// free or ctx ends; release gives it back. Without a cap it returns at once.
	Acquire(ctx context.Context) (release func(), err error)
	// Learn is told every provider response of the bucket: its status and
	// headers (a 429 with a reset or wait closes the bucket; remaining
	// counts pace it; a success clears a cooldown).
	Learn(now time.Time, origin string, status int, h http.Header)
}

// Hold is a wait the gate asks for.
type Hold struct {
	Until  time.Time
	Reason string // HoldCooldown or HoldPacing
	By     string // HoldBySelf, HoldByOtherChat, HoldByOtherProcess: who learnt it
	Source string // the header or field that said so, e.g. "x-ratelimit-reset-requests"
}

const (
	HoldCooldown = "cooldown" // the provider said the bucket is exhausted until Until
	HoldPacing   = "pacing"   // nearly exhausted: requests are spread to the reset

	HoldBySelf         = "self"
	HoldByOtherChat    = "another chat"
	HoldByOtherProcess = "another Rebound process"
)

type gateKey struct{}
type gateCtx struct {
	g      Gate
	origin string
}

// WithGate carries the attempt's gate and origin (the session id) to the
// HTTP layer, which tells the gate what each response said.
func WithGate(ctx context.Context, g Gate, origin string) context.Context {
	return context.WithValue(ctx, gateKey{}, gateCtx{g, origin})
}

// GateFrom returns what WithGate put in ctx.
func GateFrom(ctx context.Context) (Gate, string, bool) {
	c, ok := ctx.Value(gateKey{}).(gateCtx)
	return c.g, c.origin, ok
}

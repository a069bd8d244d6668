package ratelimit

import (
	"net/http"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// HTTPDoer is llm.HTTPDoer (and *http.Client).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// LearnDoer tells the gate a request carries (recovery.WithGate) what each
// response's status and headers said, before the caller reads the body.
type LearnDoer struct {
	Next HTTPDoer
	Now  func() time.Time // nil: time.Now
}

func (d LearnDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.Next.Do(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if g, origin, ok := recovery.GateFrom(req.Context()); ok && g != nil {
		now := time.Now
		if d.Now != nil {
			now = d.Now
		}
		g.Learn(now(), origin, resp.StatusCode, resp.Header)
	}
	return resp, nil
}

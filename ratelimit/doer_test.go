package ratelimit

import (
	"net/http"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

type answer struct {
	status int
	h      http.Header
}

func (a answer) Do(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: a.status, Header: a.h, Body: http.NoBody}, nil
}

func TestLearnDoer(t *testing.T) {
	b := memBucket(Options{})
	d := LearnDoer{Next: answer{429, hdr("Retry-After", "9")}, Now: func() time.Time { return t0 }}
	req, _ := http.NewRequest(http.MethodPost, endpoint+"/chat/completions", nil)
	if _, err := d.Do(req); err != nil { // no gate: nothing to tell
		t.Fatal(err)
	}
	if h := b.Hold(t0, "s2"); h != (recovery.Hold{}) {
		t.Fatalf("learnt without a gate: %+v", h)
	}
	req = req.WithContext(recovery.WithGate(req.Context(), b, "s1"))
	if _, err := d.Do(req); err != nil {
		t.Fatal(err)
	}
	if h := b.Hold(t0, "s2"); h.Until != t0.Add(9*time.Second) || h.By != recovery.HoldByOtherChat {
		t.Errorf("Hold after a 429 through the doer: %+v", h)
	}
}

package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// heldWaits sum a turn's waits on the shared rate limit (policy shared,
// recovery/hold.go) for /status, apart from its retries: a hold is no
// retry, and who reached the limit is what the user wants to know.
type heldWaits struct {
	n      int
	waited time.Duration
	by     []string
}

// add counts w when it is a wait on the shared limit, and says whether it
// was.
func (h *heldWaits) add(w session.RetryWait) bool {
	if w.Record.Policy != recovery.PolicyShared {
		return false
	}
	h.n++
	if w.Known {
		h.waited += w.Waited
	}
	by := "another chat or process"
	if f := failureOf(w.Record.Failure); f != nil && f.Held != nil {
		by = recovery.HeldBy(f.Held.By)
	}
	if !slices.Contains(h.by, by) {
		h.by = append(h.by, by)
	}
	return true
}

// words say the holds: "Rebound held the request 8s for the provider's
// shared rate limit, as learnt by another chat." ("" for none).
func (h *heldWaits) words() string {
	if h.n == 0 {
		return ""
	}
	times := ""
	if h.n > 1 {
		times = fmt.Sprintf(" (%d waits)", h.n)
	}
	return fmt.Sprintf("Rebound held the request %s%s for the provider's shared rate limit, as learnt by %s.",
		h.waited.Round(100*time.Millisecond), times, strings.Join(h.by, " and "))
}

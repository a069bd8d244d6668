package agent

import (
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// TestOutcomeWords: /status says how the last turn ended in words, never
// the protocol's stop reason, each outcome differently; an unknown one from
// the log is said as it is, bounded.
func TestOutcomeWords(t *testing.T) {
	outcomes := []string{string(acp.StopEndTurn), string(acp.StopMaxTokens), string(acp.StopMaxTurnRequests),
		string(acp.StopRefusal), string(acp.StopCancelled), session.OutcomeTurnFailed, session.OutcomeTurnInterrupted}
	seen := map[string]string{}
	for _, o := range outcomes {
		w := outcomeWords(o)
		if strings.Contains(w, "_") || strings.HasPrefix(w, "ended: ") {
			t.Errorf("%s: %q is not in words", o, w)
		}
		if prev, ok := seen[w]; ok {
			t.Errorf("%s and %s both read %q", prev, o, w)
		}
		seen[w] = o
	}
	if w := outcomeWords(strings.Repeat("x", 1000)); len(w) > 60 || !strings.HasPrefix(w, "ended: x") {
		t.Errorf("an unknown outcome reads %q: want it said, bounded", w)
	}
}

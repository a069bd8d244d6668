package agent

import (
	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// outcomeWords says how a turn ended (session.Message.TurnOutcome: a stop
// reason, failed or interrupted) in a person's words, for /status: a stop
// reason is the protocol's word, not the reader's.
func outcomeWords(outcome string) string {
	switch outcome {
	case string(acp.StopEndTurn):
		return "ended normally"
	case string(acp.StopMaxTokens):
		return "was cut at the output limit"
	case string(acp.StopMaxTurnRequests):
		return "stopped at the limit of model requests per turn"
	case string(acp.StopRefusal):
		return "was refused"
	case string(acp.StopCancelled):
		return "was cancelled"
	case session.OutcomeTurnFailed:
		return "failed"
	case session.OutcomeTurnInterrupted:
		return "was interrupted: Rebound stopped during it"
	}
	// A stop reason of a later version: say it as it is, bounded (it comes
	// from the log on disk).
	return "ended: " + clipBytes(outcome, 40)
}

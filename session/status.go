package session

import (
	"cmp"
	"encoding/json"
)

// What a turn waited for and how it ended, derived from the log, so that a
// reopened thread shows where a turn waited and why it failed in clients
// that are shown waits as status tool calls.

// Outcomes of a WaitStatus.
const (
	WaitRecovered   = "recovered"   // a later attempt of the request succeeded
	WaitFailed      = "failed"      // the turn failed: recovery gave up, or failed at once
	WaitCancelled   = "cancelled"   // the user cancelled the turn
	WaitInterrupted = "interrupted" // Rebound stopped during the turn
)

// WaitStatus is one retry chain of one logical request (its last retry in
// Retry), or a turn that failed with no retry (Retry nil).
type WaitStatus struct {
	// Seq places the status among the messages (Message.Seq): the event
	// it comes from, the chain's first retry or the failed turn's end.
	Seq     int64
	Turn    int
	Retry   *LLMRetry
	Retries int // how many retries of the chain it stands for
	Outcome string
	// Error is the failure facts of a failed turn (turn/end's error).
	Error json.RawMessage
	// Shown is the status as it was last shown, for a turn whose statuses
	// were recorded (status events); the fields above are then unset but
	// Seq (its first record), Turn and Outcome, which says how the turn
	// ended with the status still in progress ("" when it was closed).
	Shown *Status
}

// WaitStatuses derives the statuses of the log's turns, in log order: a
// turn's recorded statuses (status events) as they were last shown, and
// for a turn with none (a log written before they were recorded) its
// retry chains and failure, rebuilt from llm/retry and turn/end. It reads
// what Conversation reads and does not check the log again: a log that
// loaded is good enough to replay.
func WaitStatuses(events []Event) []WaitStatus {
	var out []WaitStatus
	recorded := map[int]bool{} // turns with status events
	for _, ev := range events {
		var d Status
		if ev.Type == TypeStatus && Unmarshal(ev.Data, &d) == nil {
			recorded[d.Turn] = true
		}
	}
	open := map[string]int{}  // chain id → index in out, for the turn that runs
	shown := map[string]int{} // status id → index in out, for the turn that runs
	for _, ev := range events {
		switch ev.Type {
		case TypeTurnStart:
			clear(open)
			clear(shown)
		case TypeStatus:
			var d Status
			if Unmarshal(ev.Data, &d) != nil {
				continue
			}
			if i, ok := shown[d.StatusID]; ok {
				if d.Detail == "" { // an update without content leaves it shown
					d.Detail = out[i].Shown.Detail
				}
				out[i].Shown = &d
				continue
			}
			shown[d.StatusID] = len(out)
			out = append(out, WaitStatus{Seq: ev.Seq, Turn: d.Turn, Shown: &d})
		case TypeLLMRetry:
			var d LLMRetry
			if Unmarshal(ev.Data, &d) != nil || recorded[d.Turn] {
				continue
			}
			if i, ok := open[d.RetryID]; ok {
				out[i].Retry, out[i].Retries = &d, out[i].Retries+1
				continue
			}
			open[d.RetryID] = len(out)
			out = append(out, WaitStatus{Seq: ev.Seq, Turn: d.Turn, Retry: &d, Retries: 1})
		case TypeStepEnd:
			var d StepEnd
			if Unmarshal(ev.Data, &d) != nil || recorded[d.Turn] || d.Outcome != OutcomeOK && d.Outcome != OutcomeTruncated {
				continue
			}
			// An attempt finished: what waited before it recovered.
			for id, i := range open {
				out[i].Outcome = WaitRecovered
				delete(open, id)
			}
		case TypeTurnEnd:
			var d TurnEnd
			if Unmarshal(ev.Data, &d) != nil {
				continue
			}
			outcome := ""
			switch {
			case d.Interrupted:
				outcome = WaitInterrupted
			case len(d.Error) > 0:
				outcome = WaitFailed
			case d.StopReason == "cancelled":
				outcome = WaitCancelled
			}
			if recorded[d.Turn] {
				for _, i := range shown {
					if out[i].Shown.State == StatusInProgress {
						out[i].Outcome = cmp.Or(outcome, WaitFailed)
					}
				}
				continue
			}
			failedShown := false
			for id, i := range open {
				out[i].Outcome = outcome
				if outcome == WaitFailed {
					out[i].Error, failedShown = d.Error, true
				}
				delete(open, id)
			}
			if outcome == WaitFailed && !failedShown {
				out = append(out, WaitStatus{Seq: ev.Seq, Turn: d.Turn, Outcome: WaitFailed, Error: d.Error})
			}
		}
	}
	return out
}

package session

import (
	"cmp"
	"encoding/json"
	"slices"
)

// What a turn waited for and how it ended, derived from the log, so that a
// reopened thread shows where a turn waited and why it failed in clients
// that are shown waits as status tool calls.

// WaitStatus is one retry chain of one logical request (Chain), or a turn
// that failed with no retry (Chain nil).
type WaitStatus struct {
	// Seq places the status among the messages (Message.Seq): the event
	// it comes from, the chain's first retry or the failed turn's end.
	Seq     int64
	Turn    int
	Chain   *Recovery
	Outcome string // the chain's (Recovery.Outcome), or WaitFailed
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
	shown := map[string]int{} // status id → index in out, for the turn that runs
	chained := map[int]bool{} // turns whose failure a chain's status says
	for _, c := range Recoveries(events) {
		if recorded[c.Turn] {
			continue
		}
		out = append(out, WaitStatus{Seq: c.Seq, Turn: c.Turn, Chain: &c, Outcome: c.Outcome, Error: c.Error})
		chained[c.Turn] = chained[c.Turn] || c.Outcome == WaitFailed
	}
	for _, ev := range events {
		switch ev.Type {
		case TypeTurnStart:
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
		case TypeTurnEnd:
			var d TurnEnd
			if Unmarshal(ev.Data, &d) != nil {
				continue
			}
			outcome := turnEndOutcome(d)
			if recorded[d.Turn] {
				for _, i := range shown {
					if out[i].Shown.State == StatusInProgress {
						out[i].Outcome = cmp.Or(outcome, WaitFailed)
					}
				}
				continue
			}
			if outcome == WaitFailed && !chained[d.Turn] {
				out = append(out, WaitStatus{Seq: ev.Seq, Turn: d.Turn, Outcome: WaitFailed, Error: d.Error})
			}
		}
	}
	// In log order: the chains came first above.
	slices.SortStableFunc(out, func(a, b WaitStatus) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

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
	f := statusFold{recorded: recordedTurns(events), shown: map[string]int{}, chained: map[int]bool{}}
	f.chains(Recoveries(events))
	for _, ev := range events {
		f.add(ev)
	}
	// In log order: the chains came first.
	slices.SortStableFunc(f.out, func(a, b WaitStatus) int { return cmp.Compare(a.Seq, b.Seq) })
	return f.out
}

// recordedTurns are the turns with status events.
func recordedTurns(events []Event) map[int]bool {
	recorded := map[int]bool{}
	for _, ev := range events {
		var d Status
		if ev.Type == TypeStatus && Unmarshal(ev.Data, &d) == nil {
			recorded[d.Turn] = true
		}
	}
	return recorded
}

// statusFold is WaitStatuses' state as it reads the log.
type statusFold struct {
	out      []WaitStatus
	recorded map[int]bool   // turns with status events
	shown    map[string]int // status id → index in out, for the turn that runs
	chained  map[int]bool   // turns whose failure a chain's status says
}

// chains adds a status per retry chain of a turn without status events.
func (f *statusFold) chains(recoveries []Recovery) {
	for _, c := range recoveries {
		if f.recorded[c.Turn] {
			continue
		}
		f.out = append(f.out, WaitStatus{Seq: c.Seq, Turn: c.Turn, Chain: &c, Outcome: c.Outcome, Error: c.Error})
		f.chained[c.Turn] = f.chained[c.Turn] || c.Outcome == WaitFailed
	}
}

// add takes one event into the fold; an event that does not decode
// changes nothing.
func (f *statusFold) add(ev Event) {
	switch ev.Type {
	case TypeTurnStart:
		clear(f.shown)
	case TypeStatus:
		var d Status
		if Unmarshal(ev.Data, &d) == nil {
			f.status(ev, d)
		}
	case TypeTurnEnd:
		var d TurnEnd
		if Unmarshal(ev.Data, &d) == nil {
			f.turnEnded(ev, d)
		}
	}
}

// status shows a status event: a new status, or an update of one the turn
// showed.
func (f *statusFold) status(ev Event, d Status) {
	i, ok := f.shown[d.StatusID]
	if !ok {
		f.shown[d.StatusID] = len(f.out)
		f.out = append(f.out, WaitStatus{Seq: ev.Seq, Turn: d.Turn, Shown: &d})
		return
	}
	if d.Detail == "" { // an update without content leaves it shown
		d.Detail = f.out[i].Shown.Detail
	}
	f.out[i].Shown = &d
}

// turnEnded says how the turn ended on its statuses still in progress, or,
// for a turn without status events that failed with no chain saying so,
// adds a status of the failure.
func (f *statusFold) turnEnded(ev Event, d TurnEnd) {
	outcome := turnEndOutcome(d)
	if f.recorded[d.Turn] {
		for _, i := range f.shown {
			if f.out[i].Shown.State == StatusInProgress {
				f.out[i].Outcome = cmp.Or(outcome, WaitFailed)
			}
		}
		return
	}
	if outcome == WaitFailed && !f.chained[d.Turn] {
		f.out = append(f.out, WaitStatus{Seq: ev.Seq, Turn: d.Turn, Outcome: WaitFailed, Error: d.Error})
	}
}

package session

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// How the wait of a retry ended (RetryWait.End).
const (
	// WaitEndDone: llm/retry-started was written; the wait ran to its end.
	WaitEndDone = "done"
	// WaitEndCancelled: the turn was cancelled during the wait.
	WaitEndCancelled = "cancelled"
	// WaitEndFailed: the turn ended otherwise during the wait.
	WaitEndFailed = "failed"
	// WaitEndInterrupted: the process died during the wait.
	WaitEndInterrupted = "interrupted"
	// WaitEndOpen: the log ends during the wait.
	WaitEndOpen = "open"
)

// RetryWait is the wait of one llm/retry as it happened, from the log's
// times: what inspect's timeline and /status report, never the delay that
// was planned (a wait cancelled after a second planned 20 hours).
type RetryWait struct {
	Seq     int64 // the llm/retry's
	Turn    int
	RetryID string
	Retry   int
	Record  LLMRetry  // the llm/retry, decoded
	At      time.Time // when the wait was scheduled
	End     string    // WaitEndDone, WaitEndCancelled, WaitEndFailed, WaitEndInterrupted or WaitEndOpen
	// Waited is from At to llm/retry-started, or to the turn/end of a turn
	// that ended during the wait (cancelled or failed). Known is false when
	// no event says when the wait ended: the process died, or the log ends.
	Waited time.Duration
	Known  bool
}

// Outcomes of a retry chain (Recovery.Outcome, WaitStatus.Outcome).
const (
	WaitRecovered   = "recovered"   // a later attempt of the request succeeded
	WaitFailed      = "failed"      // the turn failed: recovery gave up, or failed at once
	WaitCancelled   = "cancelled"   // the user cancelled the turn
	WaitInterrupted = "interrupted" // Rebound stopped during the turn
)

// Recovery is one retry chain of one turn as the log tells it: the one
// derivation of a retry's wait, which replay (WaitStatuses), inspect's
// timeline and /status all read, so they agree on the count, the outcome
// and the time waited.
type Recovery struct {
	Seq         int64 // the chain's first llm/retry in the turn
	Turn        int
	RetryID     string
	First, Last LLMRetry
	// Retries counts the chain's llm/retry records in the turn (a chain
	// carried over from an interrupted turn counts again in the next).
	Retries int
	// Outcome is WaitRecovered, WaitFailed, WaitCancelled or
	// WaitInterrupted; "" when the turn ended otherwise, or the log ends
	// with the chain open.
	Outcome string
	// Error is the turn's failure facts (turn/end's error) when it failed
	// with the chain open.
	Error json.RawMessage
	// Waits are the chain's retries' waits, in log order.
	Waits []RetryWait
	// Waited sums the waits whose end is known; Unknown counts the others
	// (a stop of Rebound cut them short, or the log ends in them).
	Waited  time.Duration
	Unknown int
}

// Recoveries derives the log's retry chains, per turn, in log order of
// their first retry. Like WaitStatuses it reads a log that loaded and does
// not check it again; an event that does not decode is skipped.
func Recoveries(events []Event) []Recovery {
	f := recoveryFold{open: map[string]int{}, pending: map[waitKey]waitAt{}}
	for _, ev := range events {
		f.add(ev)
	}
	return f.totals()
}

// recoveryFold is Recoveries' state as it reads the log: the chains so
// far, and which of them, and which of their waits, are open in the
// running turn. A chain is per turn: a turn/start forgets what the last
// turn left open.
type recoveryFold struct {
	out     []Recovery
	open    map[string]int     // the running turn's unfinished chains → index in out
	pending map[waitKey]waitAt // the running turn's waits with no end yet
}

// waitKey names one retry's wait: its chain and its number in it.
type waitKey struct {
	id string
	n  int
}

// waitAt is where a wait is in the fold's out.
type waitAt struct{ chain, wait int }

// add takes one event into the fold; events of other types, and events
// that do not decode, change nothing.
func (f *recoveryFold) add(ev Event) {
	switch ev.Type {
	case TypeTurnStart:
		f.forget()
	case TypeLLMRetry:
		var d LLMRetry
		if Unmarshal(ev.Data, &d) == nil {
			f.retry(ev, d)
		}
	case TypeLLMRetryStarted:
		var d LLMRetryStarted
		if Unmarshal(ev.Data, &d) == nil {
			f.started(ev, d)
		}
	case TypeStepEnd:
		var d StepEnd
		if Unmarshal(ev.Data, &d) == nil && (d.Outcome == OutcomeOK || d.Outcome == OutcomeTruncated) {
			// An attempt finished: what waited before it recovered.
			f.settle(WaitRecovered, nil)
		}
	case TypeTurnEnd:
		var d TurnEnd
		if Unmarshal(ev.Data, &d) == nil {
			f.turnEnded(ev, d)
		}
	}
}

// forget closes the running turn: what is open is not carried on.
func (f *recoveryFold) forget() {
	clear(f.open)
	clear(f.pending)
}

// retry adds an llm/retry's wait to its chain, starting the chain if it is
// not open in this turn.
func (f *recoveryFold) retry(ev Event, d LLMRetry) {
	i, ok := f.open[d.RetryID]
	if !ok {
		i = len(f.out)
		f.open[d.RetryID] = i
		f.out = append(f.out, Recovery{Seq: ev.Seq, Turn: d.Turn, RetryID: d.RetryID, First: d})
	}
	c := &f.out[i]
	c.Last, c.Retries = d, c.Retries+1
	f.pending[waitKey{d.RetryID, d.Retry}] = waitAt{i, len(c.Waits)}
	c.Waits = append(c.Waits, RetryWait{Seq: ev.Seq, Turn: d.Turn, RetryID: d.RetryID, Retry: d.Retry, Record: d, At: ev.Time, End: WaitEndOpen})
}

// started ends the wait an llm/retry-started names: it ran to its end.
func (f *recoveryFold) started(ev Event, d LLMRetryStarted) {
	k := waitKey{d.RetryID, d.Retry}
	if p, ok := f.pending[k]; ok {
		f.ended(p, WaitEndDone, ev.Time, true)
		delete(f.pending, k)
	}
}

// turnEnded ends the turn's open waits and chains as its turn/end says.
func (f *recoveryFold) turnEnded(ev Event, d TurnEnd) {
	for _, p := range f.pending {
		switch {
		case d.Interrupted:
			f.ended(p, WaitEndInterrupted, ev.Time, false) // written on a later load: no end time
		case len(d.Error) == 0 && d.StopReason == stopCancelled:
			f.ended(p, WaitEndCancelled, ev.Time, true)
		default:
			f.ended(p, WaitEndFailed, ev.Time, true)
		}
	}
	var facts json.RawMessage
	outcome := turnEndOutcome(d)
	if outcome == WaitFailed {
		facts = d.Error
	}
	f.settle(outcome, facts)
	f.forget()
}

// settle gives the open chains their outcome (and a failure's facts), and
// closes them.
func (f *recoveryFold) settle(outcome string, facts json.RawMessage) {
	for _, i := range f.open {
		f.out[i].Outcome = outcome
		if facts != nil {
			f.out[i].Error = facts
		}
	}
	clear(f.open)
}

// ended says how, and when if known, the wait at p ended.
func (f *recoveryFold) ended(p waitAt, end string, t time.Time, known bool) {
	w := &f.out[p.chain].Waits[p.wait]
	w.End, w.Known = end, known
	if known {
		w.Waited = max(t.Sub(w.At), 0) // a log's clock may step back
	}
}

// totals sums each chain's waits: the known ones' time, and how many are
// not known.
func (f *recoveryFold) totals() []Recovery {
	for i := range f.out {
		c := &f.out[i]
		for _, w := range c.Waits {
			if w.Known {
				c.Waited += w.Waited
			} else {
				c.Unknown++
			}
		}
	}
	return f.out
}

// turnEndOutcome is what a turn's end means for a chain still open at it.
func turnEndOutcome(d TurnEnd) string {
	switch {
	case d.Interrupted:
		return WaitInterrupted
	case len(d.Error) > 0:
		return WaitFailed
	case d.StopReason == stopCancelled:
		return WaitCancelled
	}
	return ""
}

// RetryWaits are the waits of the log's retries, in log order: the
// Recoveries' waits, one after another.
func RetryWaits(events []Event) []RetryWait {
	var out []RetryWait
	for _, c := range Recoveries(events) {
		out = append(out, c.Waits...)
	}
	slices.SortStableFunc(out, func(a, b RetryWait) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// TurnError is the failure facts the turn's turn/end recorded (nil when it
// has none) and when it was written; ended is false when the turn has not
// ended.
func TurnError(events []Event, turn int) (facts json.RawMessage, at time.Time, ended bool) {
	for i := len(events) - 1; i >= 0; i-- {
		var d TurnEnd
		if events[i].Type == TypeTurnEnd && Unmarshal(events[i].Data, &d) == nil && d.Turn == turn {
			if len(d.Error) == 0 {
				d.Error = nil
			}
			return d.Error, events[i].Time, true
		}
	}
	return nil, time.Time{}, false
}

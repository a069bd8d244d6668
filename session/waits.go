package session

import "time"

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
	At      time.Time // when the wait was scheduled
	End     string    // WaitEndDone, WaitEndCancelled, WaitEndFailed, WaitEndInterrupted or WaitEndOpen
	// Waited is from At to llm/retry-started, or to the turn/end of a turn
	// that ended during the wait (cancelled or failed). Known is false when
	// no event says when the wait ended: the process died, or the log ends.
	Waited time.Duration
	Known  bool
}

// RetryWaits derives the waits of the log's retries, in log order. Like
// WaitStatuses it reads a log that loaded and does not check it again.
func RetryWaits(events []Event) []RetryWait {
	var out []RetryWait
	type key struct {
		id string
		n  int
	}
	pending := map[key]int{} // the open turn's waits with no end yet → index in out
	ended := func(i int, end string, at time.Time, known bool) {
		w := &out[i]
		w.End, w.Known = end, known
		if known {
			w.Waited = max(at.Sub(w.At), 0) // a log's clock may step back
		}
	}
	for _, ev := range events {
		switch ev.Type {
		case TypeTurnStart:
			clear(pending)
		case TypeLLMRetry:
			var d LLMRetry
			if Unmarshal(ev.Data, &d) != nil {
				continue
			}
			pending[key{d.RetryID, d.Retry}] = len(out)
			out = append(out, RetryWait{Seq: ev.Seq, Turn: d.Turn, RetryID: d.RetryID, Retry: d.Retry, At: ev.Time, End: WaitEndOpen})
		case TypeLLMRetryStarted:
			var d LLMRetryStarted
			if Unmarshal(ev.Data, &d) != nil {
				continue
			}
			k := key{d.RetryID, d.Retry}
			if i, ok := pending[k]; ok {
				ended(i, WaitEndDone, ev.Time, true)
				delete(pending, k)
			}
		case TypeTurnEnd:
			var d TurnEnd
			if Unmarshal(ev.Data, &d) != nil {
				continue
			}
			for _, i := range pending {
				switch {
				case d.Interrupted:
					ended(i, WaitEndInterrupted, ev.Time, false) // written on a later load: no end time
				case len(d.Error) == 0 && d.StopReason == stopCancelled:
					ended(i, WaitEndCancelled, ev.Time, true)
				default:
					ended(i, WaitEndFailed, ev.Time, true)
				}
			}
			clear(pending)
		}
	}
	return out
}

package session_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/session"
)

// chainView is what a test compares of a Recovery.
type chainView struct {
	Turn          int
	RetryID       string
	First, Last   int // retry numbers
	Retries       int
	Outcome       string
	Waited        time.Duration
	Unknown       int
	Ends          []string
	Failed        bool // the turn's failure facts are kept
	LastDelayMs   int64
	FirstRecorded int64 // seq
}

func view(c session.Recovery) chainView {
	v := chainView{Turn: c.Turn, RetryID: c.RetryID, First: c.First.Retry, Last: c.Last.Retry, Retries: c.Retries,
		Outcome: c.Outcome, Waited: c.Waited, Unknown: c.Unknown, Failed: len(c.Error) > 0, LastDelayMs: c.Last.DelayMs, FirstRecorded: c.Seq}
	for _, w := range c.Waits {
		v.Ends = append(v.Ends, w.End)
	}
	return v
}

// TestRecoveries_LogBeforeStatuses: a log written by an older Rebound (no
// status events, no policy numbering) derives each chain's first and last
// retry, its count, its outcome and what it really waited: recovered, gave
// up, cancelled waiting, cancelled running, interrupted, carried into the
// next turn, and open at the log's end.
func TestRecoveries_LogBeforeStatuses(t *testing.T) {
	ld, err := session.Load("testdata/before_statuses.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := []chainView{
		{Turn: 1, RetryID: "retry_a", First: 1, Last: 1, Retries: 1, Outcome: session.WaitRecovered, Waited: 500 * ms,
			Ends: []string{session.WaitEndDone}, LastDelayMs: 500, FirstRecorded: 5},
		{Turn: 2, RetryID: "retry_b", First: 1, Last: 2, Retries: 2, Outcome: session.WaitFailed, Waited: 3 * time.Second,
			Ends: []string{session.WaitEndDone, session.WaitEndDone}, Failed: true, LastDelayMs: 2000, FirstRecorded: 14},
		{Turn: 3, RetryID: "retry_c", First: 1, Last: 1, Retries: 1, Outcome: session.WaitCancelled, Waited: 3 * time.Second,
			Ends: []string{session.WaitEndCancelled}, LastDelayMs: 8000, FirstRecorded: 26},
		{Turn: 4, RetryID: "retry_d", First: 1, Last: 1, Retries: 1, Outcome: session.WaitCancelled, Waited: 500 * ms,
			Ends: []string{session.WaitEndDone}, LastDelayMs: 500, FirstRecorded: 31},
		{Turn: 5, RetryID: "retry_e", First: 1, Last: 1, Retries: 1, Outcome: session.WaitInterrupted, Unknown: 1,
			Ends: []string{session.WaitEndInterrupted}, LastDelayMs: 30000, FirstRecorded: 39},
		{Turn: 6, RetryID: "retry_e", First: 2, Last: 2, Retries: 1, Outcome: session.WaitRecovered, Waited: time.Second,
			Ends: []string{session.WaitEndDone}, LastDelayMs: 1000, FirstRecorded: 44},
		{Turn: 7, RetryID: "retry_f", First: 1, Last: 1, Retries: 1, Unknown: 1,
			Ends: []string{session.WaitEndOpen}, LastDelayMs: 500, FirstRecorded: 53},
	}
	var got []chainView
	for _, c := range session.Recoveries(ld.Events) {
		got = append(got, view(c))
	}
	if !slices.EqualFunc(got, want, func(a, b chainView) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Errorf("Recoveries:\n got %+v\nwant %+v", got, want)
	}

	// Replay reads the same chains: one status each, with the chain's
	// outcome, and turn 2's failure facts.
	var statuses []string
	for _, w := range session.WaitStatuses(ld.Events) {
		if w.Chain == nil {
			t.Errorf("status at seq %d has no chain", w.Seq)
			continue
		}
		statuses = append(statuses, fmt.Sprintf("%d:%d:%s:%v", w.Turn, w.Chain.Retries, w.Outcome, len(w.Error) > 0))
	}
	if w := []string{"1:1:recovered:false", "2:2:failed:true", "3:1:cancelled:false", "4:1:cancelled:false",
		"5:1:interrupted:false", "6:1:recovered:false", "7:1::false"}; !slices.Equal(statuses, w) {
		t.Errorf("WaitStatuses = %q\nwant %q", statuses, w)
	}

	// The waits, in log order, are the chains' waits.
	var seqs []int64
	for _, w := range session.RetryWaits(ld.Events) {
		seqs = append(seqs, w.Seq)
	}
	if w := []int64{5, 14, 18, 26, 31, 39, 44, 53}; !slices.Equal(seqs, w) {
		t.Errorf("RetryWaits at seqs %v, want %v", seqs, w)
	}

	if raw, _, ended := session.TurnError(ld.Events, 2); !ended || string(raw) != `{"code":"RATE_LIMIT","status":429,"message":"slow down"}` {
		t.Errorf("TurnError(2) = %s, %v", raw, ended)
	}
	if raw, _, ended := session.TurnError(ld.Events, 3); !ended || raw != nil {
		t.Errorf("TurnError(3) = %s, %v; want no facts, ended", raw, ended)
	}
	if _, _, ended := session.TurnError(ld.Events, 7); ended {
		t.Errorf("TurnError(7): the open turn has ended")
	}
}

// TestRecoveries_Property: on generated logs, the derivation agrees with
// itself and with the log: every llm/retry is in exactly one chain of its
// turn, in order; a chain's count is its waits; its waited time is the sum
// of its known waits and never negative; a wait whose end is not known
// counts as unknown; and a chain's outcome is the one its turn's first
// successful step or its end gives.
func TestRecoveries_Property(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		events, want := genRetryLog(rng)
		chains := session.Recoveries(events)
		var retries []int64
		var outcomes []string
		for _, c := range chains {
			if c.Retries != len(c.Waits) || c.Retries == 0 {
				t.Fatalf("seed %d: chain %s of turn %d counts %d retries, has %d waits", seed, c.RetryID, c.Turn, c.Retries, len(c.Waits))
			}
			if c.First.Step != c.Waits[0].Record.Step || c.Last.Step != c.Waits[len(c.Waits)-1].Record.Step || c.Seq != c.Waits[0].Seq {
				t.Fatalf("seed %d: first/last of chain %s are not its first and last waits", seed, c.RetryID)
			}
			var sum time.Duration
			unknown := 0
			for _, w := range c.Waits {
				if w.Turn != c.Turn || w.RetryID != c.RetryID {
					t.Fatalf("seed %d: a wait of turn %d chain %s in chain %s of turn %d", seed, w.Turn, w.RetryID, c.RetryID, c.Turn)
				}
				if w.Waited < 0 {
					t.Fatalf("seed %d: negative wait %v", seed, w.Waited)
				}
				if w.Known {
					sum += w.Waited
				} else {
					unknown++
				}
				if w.Known == (w.End == session.WaitEndInterrupted || w.End == session.WaitEndOpen) {
					t.Fatalf("seed %d: wait ending %q known=%v", seed, w.End, w.Known)
				}
				retries = append(retries, w.Seq)
			}
			if sum != c.Waited || unknown != c.Unknown {
				t.Fatalf("seed %d: chain waited %v (%d unknown), its waits %v (%d)", seed, c.Waited, c.Unknown, sum, unknown)
			}
			outcomes = append(outcomes, c.Outcome)
		}
		if !slices.IsSorted(retries) {
			// Chains of one turn follow one another: their waits are in log order.
			t.Fatalf("seed %d: waits out of order %v", seed, retries)
		}
		if !slices.Equal(retries, want.retrySeqs) {
			t.Fatalf("seed %d: chains hold retries %v, the log has %v", seed, retries, want.retrySeqs)
		}
		if !slices.Equal(outcomes, want.outcomes) {
			t.Fatalf("seed %d: outcomes %q, want %q", seed, outcomes, want.outcomes)
		}
	}
}

type genWant struct {
	retrySeqs []int64
	outcomes  []string
}

// genRetryLog makes a log of turns whose steps fail and retry, recover,
// give up, are cancelled during a wait or a retry, or are cut by a stop of
// Rebound, with the outcome each chain must have.
func genRetryLog(rng *rand.Rand) ([]session.Event, genWant) {
	var evs []session.Event
	var want genWant
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(typ string, data any) int64 {
		now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		if rng.IntN(20) == 0 {
			now = now.Add(-time.Second) // a clock that steps back
		}
		b, _ := json.Marshal(data)
		seq := int64(len(evs) + 1)
		evs = append(evs, session.Event{Seq: seq, Time: now, Type: typ, Data: b})
		return seq
	}
	chainN := 0
	for turn := 1; turn <= 1+rng.IntN(5); turn++ {
		add(session.TypeTurnStart, session.TurnStart{Turn: turn, Text: "p"})
		step := 0
		ended := false
		for c := 0; c < 1+rng.IntN(3) && !ended; c++ {
			chainN++
			id := fmt.Sprint("retry_", chainN)
			n := 1 + rng.IntN(3)
			outcome := ""
			for i := 1; i <= n; i++ {
				step++
				add(session.TypeStepStart, session.StepStart{Turn: turn, Step: step})
				add(session.TypeStepEnd, session.StepEnd{Turn: turn, Step: step, Outcome: session.OutcomeFailed})
				want.retrySeqs = append(want.retrySeqs, add(session.TypeLLMRetry, session.LLMRetry{Turn: turn, Step: step, RetryID: id, Retry: i, MaxRetries: 3, DelayMs: 500}))
				if rng.IntN(4) > 0 {
					add(session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: turn, RetryID: id, Retry: i})
				}
			}
			switch rng.IntN(5) {
			case 0:
				add(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Error: json.RawMessage(`{"code":"SERVER"}`)})
				outcome, ended = session.WaitFailed, true
			case 1:
				add(session.TypeTurnEnd, session.TurnEnd{Turn: turn, StopReason: "cancelled"})
				outcome, ended = session.WaitCancelled, true
			case 2:
				add(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Interrupted: true})
				outcome, ended = session.WaitInterrupted, true
			default:
				step++
				add(session.TypeStepStart, session.StepStart{Turn: turn, Step: step})
				add(session.TypeStepEnd, session.StepEnd{Turn: turn, Step: step, Outcome: session.OutcomeOK})
				outcome = session.WaitRecovered
			}
			want.outcomes = append(want.outcomes, outcome)
		}
		if !ended {
			add(session.TypeTurnEnd, session.TurnEnd{Turn: turn, StopReason: "end_turn"})
		}
	}
	return evs, want
}

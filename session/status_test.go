package session_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/session"
)

// A reopened thread shows each wait where it happened and how it ended.
func TestWaitStatuses(t *testing.T) {
	retry := func(turn, step, n int, id string) rec {
		return rec{session.TypeLLMRetry, `{"turn":` + itoa(turn) + `,"step":` + itoa(step) + `,"retryId":"` + id + `","retry":` + itoa(n) + `,"maxRetries":2,"delayMs":500,"failure":{"code":"SERVER","message":"busy","status":503}}`}
	}
	failStep := func(turn, step int) rec {
		return rec{session.TypeStepEnd, `{"turn":` + itoa(turn) + `,"step":` + itoa(step) + `,"outcome":"failed","failure":{"code":"SERVER","message":"busy"}}`}
	}
	step := func(turn, n int) rec {
		return rec{session.TypeStepStart, `{"turn":` + itoa(turn) + `,"step":` + itoa(n) + `}`}
	}
	log := render(rStart,
		// Turn 1: fails, retries, recovers.
		rTurn1, rStep1, failStep(1, 1), retry(1, 1, 1, "r1"), step(1, 2),
		rec{session.TypeAssistantMessage, `{"turn":1,"step":2,"messageId":"m1","text":"Hello"}`},
		rec{session.TypeStepEnd, `{"turn":1,"step":2,"outcome":"ok"}`},
		rec{session.TypeTurnEnd, `{"turn":1,"stopReason":"end_turn"}`},
		// Turn 2: gives up after two retries.
		rec{session.TypeTurnStart, `{"turn":2,"text":"again"}`}, step(2, 1), failStep(2, 1), retry(2, 1, 1, "r2"),
		step(2, 2), failStep(2, 2), retry(2, 2, 2, "r2"), step(2, 3), failStep(2, 3),
		rec{session.TypeTurnEnd, `{"turn":2,"error":{"code":"SERVER","message":"busy"}}`},
		// Turn 3: fails at once, no retry.
		rec{session.TypeTurnStart, `{"turn":3,"text":"bad"}`}, step(3, 1),
		rec{session.TypeStepEnd, `{"turn":3,"step":1,"outcome":"failed","failure":{"code":"INVALID_REQUEST","message":"no"}}`},
		rec{session.TypeTurnEnd, `{"turn":3,"error":{"code":"INVALID_REQUEST","message":"no"}}`},
		// Turn 4: cancelled during the wait.
		rec{session.TypeTurnStart, `{"turn":4,"text":"wait"}`}, step(4, 1), failStep(4, 1), retry(4, 1, 1, "r4"),
		rec{session.TypeTurnEnd, `{"turn":4,"stopReason":"cancelled"}`},
	)
	evs := events(t, log)
	got := session.WaitStatuses(evs)
	want := []struct {
		turn, retries int
		outcome       string
		retry         bool
	}{
		{1, 1, session.WaitRecovered, true},
		{2, 2, session.WaitFailed, true},
		{3, 0, session.WaitFailed, false},
		{4, 1, session.WaitCancelled, true},
	}
	if len(got) != len(want) {
		t.Fatalf("%d statuses, want %d: %+v", len(got), len(want), got)
	}
	msgs, err := session.Conversation(evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		g := got[i]
		retries := 0
		if g.Chain != nil {
			retries = g.Chain.Retries
		}
		if g.Turn != w.turn || retries != w.retries || g.Outcome != w.outcome || (g.Chain != nil) != w.retry {
			t.Errorf("status %d = turn %d, %d retries, %q, chain %v; want %+v", i, g.Turn, retries, g.Outcome, g.Chain != nil, w)
		}
		if w.outcome == session.WaitFailed && len(g.Error) == 0 {
			t.Errorf("status %d: a failed turn's status has no failure facts", i)
		}
	}
	// Placed between the turn's prompt and its reply.
	if !(msgs[0].Seq < got[0].Seq && got[0].Seq < msgs[1].Seq) {
		t.Errorf("turn 1's status at seq %d, its prompt at %d and reply at %d", got[0].Seq, msgs[0].Seq, msgs[1].Seq)
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// A turn's recorded statuses stand for it as they were last shown (its
// llm/retry records are not rebuilt into a second one); a status a stop
// of Rebound left in progress says so; a turn with no records (an older
// log) is still rebuilt from its retries.
func TestWaitStatuses_Recorded(t *testing.T) {
	status := func(turn int, id, title, state string) rec {
		return rec{session.TypeStatus, `{"turn":` + itoa(turn) + `,"statusId":"` + id + `","title":"` + title + `","detail":"d","state":"` + state + `"}`}
	}
	log := render(rStart,
		// Turn 1: a wait, recorded, then a nearly-full compaction.
		rTurn1, rStep1, rStepFail1,
		rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"r1","retry":1,"maxRetries":2,"delayMs":500}`},
		status(1, "s1", "waiting", "in_progress"), status(1, "s1", "recovered", "completed"),
		status(1, "s2", "nearly full", "in_progress"), status(1, "s2", "summarised", "completed"),
		rec{session.TypeStepStart, `{"turn":1,"step":2}`},
		rec{session.TypeAssistantMessage, `{"turn":1,"step":2,"messageId":"m1","text":"Hello"}`},
		rec{session.TypeStepEnd, `{"turn":1,"step":2,"outcome":"ok"}`},
		rTurnEnd1,
		// Turn 2: Rebound stopped while a status was in progress.
		rec{session.TypeTurnStart, `{"turn":2,"text":"again"}`},
		status(2, "s3", "waiting for MCP", "in_progress"),
		rec{session.TypeTurnEnd, `{"turn":2,"interrupted":true}`},
		// Turn 3: no records: rebuilt.
		rec{session.TypeTurnStart, `{"turn":3,"text":"bad"}`},
		rec{session.TypeTurnEnd, `{"turn":3,"error":{"code":"INVALID_REQUEST","message":"no"}}`},
	)
	got := session.WaitStatuses(events(t, log))
	type st struct {
		id, title, state, outcome string
		retry                     bool
	}
	var short []st
	for _, g := range got {
		s := st{outcome: g.Outcome, retry: g.Chain != nil}
		if g.Shown != nil {
			s.id, s.title, s.state = g.Shown.StatusID, g.Shown.Title, g.Shown.State
		}
		short = append(short, s)
	}
	want := []st{
		{id: "s1", title: "recovered", state: "completed"},
		{id: "s2", title: "summarised", state: "completed"},
		{id: "s3", title: "waiting for MCP", state: "in_progress", outcome: session.WaitInterrupted},
		{outcome: session.WaitFailed},
	}
	if fmt.Sprint(short) != fmt.Sprint(want) {
		t.Errorf("statuses\n%+v\nwant\n%+v", short, want)
	}
}

// A status record belongs to the open turn, names its status and a state.
func TestCheck_Status(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"outside a turn", `{"turn":2,"statusId":"s","title":"t","state":"completed"}`},
		{"no id", `{"turn":1,"statusId":"","title":"t","state":"completed"}`},
		{"no such state", `{"turn":1,"statusId":"s","title":"t","state":"pending"}`},
	} {
		if _, err := session.Parse(strings.NewReader(render(rStart, rTurn1, rec{session.TypeStatus, tc.data})), "f.jsonl"); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := session.Parse(strings.NewReader(render(rStart, rTurn1, rec{session.TypeStatus, `{"turn":1,"statusId":"s","title":"t","state":"in_progress"}`})), "f.jsonl"); err != nil {
		t.Errorf("a good status refused: %v", err)
	}
}

// Recorded statuses across updates and turns: an update without detail
// keeps the detail last shown; a status id is the running turn's (the
// next turn's status of the same id is a status of its own); a status
// still in progress at its turn's end takes the turn's outcome, failed
// when the turn's end names none.
func TestWaitStatuses_RecordedUpdatesAndTurns(t *testing.T) {
	status := func(turn int, id, detail, state string) rec {
		return rec{session.TypeStatus, `{"turn":` + itoa(turn) + `,"statusId":"` + id + `","title":"t","detail":"` + detail + `","state":"` + state + `"}`}
	}
	log := render(rStart,
		rTurn1, status(1, "s", "first", "in_progress"), status(1, "s", "", "completed"),
		rec{session.TypeTurnEnd, `{"turn":1,"stopReason":"end_turn"}`},
		rec{session.TypeTurnStart, `{"turn":2,"text":"again"}`}, status(2, "s", "second", "in_progress"),
		rec{session.TypeTurnEnd, `{"turn":2,"stopReason":"cancelled"}`},
		rec{session.TypeTurnStart, `{"turn":3,"text":"more"}`}, status(3, "s", "third", "in_progress"),
		rec{session.TypeTurnEnd, `{"turn":3,"stopReason":"end_turn"}`},
	)
	got := session.WaitStatuses(events(t, log))
	var short []string
	for _, g := range got {
		short = append(short, fmt.Sprintf("%d %s %s %s %q", g.Turn, g.Shown.StatusID, g.Shown.Detail, g.Shown.State, g.Outcome))
	}
	want := []string{
		`1 s first completed ""`,
		`2 s second in_progress "cancelled"`,
		`3 s third in_progress "failed"`,
	}
	if fmt.Sprint(short) != fmt.Sprint(want) {
		t.Errorf("statuses\n%q\nwant\n%q", short, want)
	}
}

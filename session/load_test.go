package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/session"
)

func TestLoad_Fixture(t *testing.T) {
	ld, err := session.Load("testdata/two_turns.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(ld.Events) != 24 || ld.Events[23].Seq != 24 {
		t.Errorf("loaded %d events, want 24 ending at seq 24", len(ld.Events))
	}
	if len(ld.Warnings) != 0 || ld.OpenTurn != 0 || ld.TornBytes != 0 {
		t.Errorf("clean log: warnings %q, open turn %d, torn %d", ld.Warnings, ld.OpenTurn, ld.TornBytes)
	}
}

// TestParse_Accepts covers logs that load, some with repairs or warnings.
func TestParse_Accepts(t *testing.T) {
	const torn = `{"seq":5,"v":1,"time":"2000-01-01T00:00:00Z","type":"assistant/ch`
	complete := render(rStart, rTurn1, rStep1, rChunk1)
	tests := []struct {
		name       string
		log        string
		wantEvents int
		want       session.Loaded // Events are counted, not compared
	}{
		{
			name:       "clean",
			log:        render(rStart, rTurn1, rStep1, rChunk1, rMessage1, rStepEnd1, rTurnEnd1),
			wantEvents: 7,
			want:       session.Loaded{ValidSize: int64(len(render(rStart, rTurn1, rStep1, rChunk1, rMessage1, rStepEnd1, rTurnEnd1)))},
		},
		{
			name:       "torn last line is dropped",
			log:        complete + torn,
			wantEvents: 4,
			want: session.Loaded{
				Warnings: []string{
					"t.jsonl:5: dropped a torn last line (65 bytes, no newline): the write was cut short",
					"t.jsonl:2: turn 1 has no turn/end: the last turn was left open",
				},
				TornBytes: int64(len(torn)),
				ValidSize: int64(len(complete)),
				OpenTurn:  1,
				OpenStep:  1,
				LastStep:  1,
			},
		},
		{
			name:       "complete last line without newline is kept",
			log:        strings.TrimSuffix(render(rStart, rTurn1, rTurnEnd1), "\n"),
			wantEvents: 3,
			want: session.Loaded{
				Warnings:     []string{"t.jsonl:3: last line is complete but has no newline"},
				ValidSize:    int64(len(render(rStart, rTurn1, rTurnEnd1)) - 1),
				Unterminated: true,
			},
		},
		{
			name: "open last turn with a pending tool call",
			log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1,
				rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"x","arguments":"{}"}`}),
			wantEvents: 6,
			want: session.Loaded{
				Warnings:         []string{"t.jsonl:2: turn 1 has no turn/end: the last turn was left open"},
				OpenTurn:         1,
				LastStep:         1,
				PendingToolCalls: []string{"c1", "c2"},
			},
		},
		{
			name:       "failed turn may leave its step open",
			log:        render(rStart, rTurn1, rStep1, rChunk1, rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"ABORTED"}}`}),
			wantEvents: 5,
		},
		{
			name:       "cancelled turn may leave its step open",
			log:        render(rStart, rTurn1, rStep1, rMessage1, rec{session.TypeTurnEnd, `{"turn":1,"stopReason":"cancelled"}`}),
			wantEvents: 5,
		},
		{
			name: "retry chains",
			log: render(rStart, rTurn1, rStep1, rStepFail1,
				rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":2,"delayMs":500}`},
				rec{session.TypeLLMRetryStarted, `{"turn":1,"retryId":"a","retry":1}`},
				rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":2,"maxRetries":2,"delayMs":1000}`},
				rec{session.TypeLLMRetryStarted, `{"turn":1,"retryId":"a","retry":2}`},
				rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"b","retry":1,"maxRetries":2,"delayMs":500}`},
				rec{session.TypeCompaction, `{"turn":1,"summary":"s","replaced":4}`},
				rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"SERVER"}}`},
				rec{session.TypeTurnStart, `{"turn":2,"prompt":[],"text":"again"}`},
				rec{session.TypeLLMRetry, `{"turn":2,"step":0,"retryId":"c","retry":1,"maxRetries":2,"delayMs":500}`},
				rec{session.TypeTurnEnd, `{"turn":2,"stopReason":"cancelled"}`}),
			wantEvents: 14,
		},
		{
			name: "tool calls answered, one never dispatched, permission recorded; an id may return in a later reply",
			log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1,
				rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"x","arguments":"{}"}`},
				rec{session.TypePermission, `{"turn":1,"toolCallId":"c1","scope":"x","outcome":"allow_always"}`},
				rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c1","status":"completed","output":"ok"}`},
				rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c2","status":"aborted","output":"not run"}`},
				rec{session.TypeStepStart, `{"turn":1,"step":2}`},
				rec{session.TypeAssistantMessage, `{"turn":1,"step":2,"messageId":"m2","text":"","toolCalls":[{"id":"c1","name":"x","arguments":"{}"}]}`},
				rec{session.TypeStepEnd, `{"turn":1,"step":2,"outcome":"ok"}`},
				rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c1","status":"failed","output":"no"}`},
				rTurnEnd1),
			wantEvents: 14,
		},
		{
			name:       "unknown data fields are allowed",
			log:        render(rec{session.TypeSessionStart, `{"sessionId":"s1","cwd":"/w","future":true}`}),
			wantEvents: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := session.Parse(strings.NewReader(tt.log), "t.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Events) != tt.wantEvents {
				t.Errorf("loaded %d events, want %d", len(got.Events), tt.wantEvents)
			}
			want := tt.want
			if want.ValidSize == 0 && want.TornBytes == 0 && !want.Unterminated {
				want.ValidSize = int64(len(tt.log))
			}
			if diff := cmp.Diff(want, *got, cmpopts.IgnoreFields(session.Loaded{}, "Events", "Data"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParse_Invariants checks that each broken rule is refused with the line
// and seq of the offending event and a message that says what is wrong.
func TestParse_Invariants(t *testing.T) {
	turn1Open := render(rStart, rTurn1)
	tests := []struct {
		name string
		log  string
		line int
		seq  int64
		msg  string
		// prefix compares only the start of msg, where the rest is the JSON
		// decoder's wording.
		prefix bool
	}{
		{name: "empty", log: "", line: 1, msg: "no events: a log must begin with session/start"},
		{name: "only a torn line", log: `{"seq":1,"v":1`, line: 1, msg: "no events: a log must begin with session/start"},
		{name: "first is not session/start", log: render(rTurn1), line: 1, seq: 1, msg: "turn/start: a log must begin with session/start"},
		{name: "first seq is not 1", log: line(2, session.TypeSessionStart, rStart.data), line: 1, seq: 2, msg: "seq 2: the first event must have seq 1"},
		{name: "seq repeats", log: turn1Open + line(2, session.TypeStepStart, rStep1.data), line: 3, seq: 2, msg: "seq 2 after 2: seq must strictly increase"},
		{name: "seq goes back", log: turn1Open + line(1, session.TypeStepStart, rStep1.data), line: 3, seq: 1, msg: "seq 1 after 2: seq must strictly increase"},
		{name: "seq skips", log: turn1Open + line(4, session.TypeStepStart, rStep1.data), line: 3, seq: 4, msg: "seq 4 after 2: seq must increase by one"},
		{name: "v too new", log: turn1Open + `{"seq":3,"v":2,"time":"2000-01-01T00:00:00Z","type":"step/start","data":{"turn":1,"step":1}}` + "\n", line: 3, seq: 3, msg: "v 2: this build reads schema versions 1 to 1"},
		{name: "v zero", log: turn1Open + `{"seq":3,"v":0,"time":"2000-01-01T00:00:00Z","type":"step/start","data":{"turn":1,"step":1}}` + "\n", line: 3, seq: 3, msg: "v 0: this build reads schema versions 1 to 1"},
		{name: "unknown type", log: turn1Open + line(3, "step/begin", rStep1.data), line: 3, seq: 3, msg: `unknown event type "step/begin"`},
		{name: "turn/end title too long", log: turn1Open + line(3, session.TypeTurnEnd, `{"turn":1,"stopReason":"cancelled","title":"`+strings.Repeat("x", 1025)+`"}`), line: 3, seq: 3, msg: "turn/end for turn 1: title is 1025 bytes, at most 1024 are allowed"},
		{name: "missing time", log: turn1Open + `{"seq":3,"v":1,"type":"step/start","data":{"turn":1,"step":1}}` + "\n", line: 3, seq: 3, msg: `event has no "time"`},
		{name: "missing data", log: turn1Open + `{"seq":3,"v":1,"time":"2000-01-01T00:00:00Z","type":"step/start"}` + "\n", line: 3, seq: 3, msg: `event has no "data"`},
		{name: "data null", log: turn1Open + line(3, session.TypeStepStart, "null"), line: 3, seq: 3, msg: "step/start: data must be a JSON object"},
		{name: "data of the wrong shape", log: turn1Open + line(3, session.TypeStepStart, `{"turn":"one","step":1}`), line: 3, seq: 3, msg: "step/start: bad data: ", prefix: true},
		{name: "bad middle line", log: turn1Open + "{not json}\n" + line(3, session.TypeTurnEnd, rTurnEnd1.data), line: 3, msg: "not a JSON event: ", prefix: true},
		{name: "empty middle line", log: turn1Open + "\n" + line(3, session.TypeTurnEnd, rTurnEnd1.data), line: 3, msg: "not a JSON event: ", prefix: true},
		{name: "complete unterminated last line is checked", log: turn1Open + `{"seq":3}`, line: 3, seq: 3, msg: `event has no "v"`},
		{name: "empty session id", log: render(rec{session.TypeSessionStart, `{"sessionId":"","cwd":"/w"}`}), line: 1, seq: 1, msg: "session/start: sessionId is empty"},
		{name: "session/config without configId", log: render(rStart, rec{session.TypeConfig, `{"configId":"","value":"m"}`}), line: 2, seq: 2, msg: "session/config: configId is empty"},
		{name: "second session/start", log: render(rStart, rStart), line: 2, seq: 2, msg: "session/start again: only the first event may be session/start"},

		{name: "first turn is not 1", log: render(rStart, rec{session.TypeTurnStart, `{"turn":2,"prompt":[],"text":""}`}), line: 2, seq: 2, msg: "turn/start for turn 2 after turn 0: turns go up by one from 1"},
		{name: "turn skips", log: render(rStart, rTurn1, rTurnEnd1, rec{session.TypeTurnStart, `{"turn":3,"prompt":[],"text":""}`}), line: 4, seq: 4, msg: "turn/start for turn 3 after turn 1: turns go up by one from 1"},
		{name: "turn/start while a turn is open", log: render(rStart, rTurn1, rec{session.TypeTurnStart, `{"turn":2,"prompt":[],"text":""}`}), line: 3, seq: 3, msg: "turn/start for turn 2 while turn 1 is open: every turn/start needs a turn/end first"},
		{name: "turn/end outside a turn", log: render(rStart, rTurnEnd1), line: 2, seq: 2, msg: "turn/end for turn 1 outside a turn"},
		{name: "turn/end for another turn", log: render(rStart, rTurn1, rec{session.TypeTurnEnd, `{"turn":2}`}), line: 3, seq: 3, msg: "turn/end for turn 2, but turn 1 is open"},
		{name: "step/end usage on a failed step", log: render(rStart, rTurn1, rStep1, rec{session.TypeStepEnd, `{"turn":1,"step":1,"outcome":"failed","usage":{"used":5}}`}), line: 4, seq: 4, msg: "step/end usage on a failed step: only a finished request has one"},
		{name: "step/end usage cost without currency", log: render(rStart, rTurn1, rStep1, rMessage1, rec{session.TypeStepEnd, `{"turn":1,"step":1,"outcome":"ok","usage":{"used":5,"cost":0.1}}`}), line: 5, seq: 5, msg: "step/end usage cost without a currency"},
		{name: "step/end usage negative cost", log: render(rStart, rTurn1, rStep1, rMessage1, rec{session.TypeStepEnd, `{"turn":1,"step":1,"outcome":"ok","usage":{"used":5,"cost":-1,"currency":"USD"}}`}), line: 5, seq: 5, msg: "step/end usage cost -1: want a finite amount of at least 0"},
		{name: "turn/end with an open step", log: render(rStart, rTurn1, rStep1, rTurnEnd1), line: 4, seq: 4, msg: "turn/end for turn 1 while step 1 is open: a turn that ends without error or cancellation must close its steps"},
		{name: "turn/end with an unanswered tool call", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c1","status":"completed","output":""}`}, rTurnEnd1), line: 7, seq: 7, msg: `turn/end for turn 1, but tool call "c2" (line 4) has no tool/result`},
		{name: "step/start with an unanswered tool call", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypeStepStart, `{"turn":1,"step":2}`}), line: 6, seq: 6, msg: `step/start for step 2, but tool call "c1" (line 4) has no tool/result: every call of a reply is answered before the next request`},
		{name: "tool call without id in a reply", log: render(rStart, rTurn1, rStep1, rec{session.TypeAssistantMessage, `{"turn":1,"step":1,"messageId":"m","text":"","toolCalls":[{"id":"","name":"x","arguments":""}]}`}), line: 4, seq: 4, msg: "assistant/message toolCalls[0]: id is empty"},
		{name: "tool call id twice in a reply", log: render(rStart, rTurn1, rStep1, rec{session.TypeAssistantMessage, `{"turn":1,"step":1,"messageId":"m","text":"","toolCalls":[{"id":"a","name":"x","arguments":""},{"id":"a","name":"y","arguments":""}]}`}), line: 4, seq: 4, msg: `assistant/message toolCalls[1]: id "a" appears twice`},
		{name: "tool/call without id", log: render(rStart, rTurn1, rStep1, rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"","name":"x","arguments":""}`}), line: 4, seq: 4, msg: "tool/call: toolCallId is empty"},
		{name: "tool/call of a step not started", log: render(rStart, rTurn1, rStep1, rec{session.TypeToolCall, `{"turn":1,"step":2,"toolCallId":"c1","name":"x","arguments":""}`}), line: 4, seq: 4, msg: `tool/call "c1" for step 2, but turn 1 has started steps 1 to 1`},
		{name: "tool/call the reply did not ask for", log: render(rStart, rTurn1, rStep1, rMessage1, rStepEnd1, rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"x","arguments":""}`}), line: 6, seq: 6, msg: `tool/call "c1" is not a call of turn 1's last reply awaiting a result`},
		{name: "tool/call with another tool's name", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"y","arguments":""}`}), line: 6, seq: 6, msg: `tool/call "c1" names tool "y", but the reply asked for "x"`},
		{name: "tool/call dispatched twice", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"x","arguments":""}`}, rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"x","arguments":""}`}), line: 7, seq: 7, msg: `tool/call "c1" again: a call is dispatched at most once`},
		{name: "plan for no pending call", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypePlan, `{"turn":1,"toolCallId":"zz","entries":[]}`}), line: 6, seq: 6, msg: `plan for "zz", which is not a tool call of turn 1 awaiting a result`},
		{name: "plan with a bad status", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypePlan, `{"turn":1,"toolCallId":"c1","entries":[{"content":"a","status":"done","priority":"low"}]}`}), line: 6, seq: 6, msg: `plan entry 1: status "done": want pending, in_progress or completed`},
		{name: "plan with a bad priority", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypePlan, `{"turn":1,"toolCallId":"c1","entries":[{"content":"a","status":"pending","priority":"p1"}]}`}), line: 6, seq: 6, msg: `plan entry 1: priority "p1": want high, medium or low`},
		{name: "tool/result with a bad status", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c1","status":"fine","output":""}`}), line: 6, seq: 6, msg: `tool/result status "fine": want "completed", "failed" or "aborted"`},
		{name: "permission before dispatch", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypePermission, `{"turn":1,"toolCallId":"c1","scope":"x","outcome":"allow_once"}`}), line: 6, seq: 6, msg: `permission for "c1", which is not a dispatched tool call of turn 1 awaiting a result`},
		{name: "permission with a bad outcome", log: render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1, rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"x","arguments":""}`}, rec{session.TypePermission, `{"turn":1,"toolCallId":"c1","scope":"x","outcome":"maybe"}`}), line: 7, seq: 7, msg: `permission outcome "maybe": want allow_once, allow_always, reject_once, reject_always or cancelled`},
		{name: "tool/result without a call", log: render(rStart, rTurn1, rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c9","status":"completed","output":""}`}), line: 3, seq: 3, msg: `tool/result for "c9", which is not a tool call of turn 1 awaiting a result`},

		{name: "llm/retry without id", log: render(rStart, rTurn1, rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"","retry":1,"maxRetries":2,"delayMs":1}`}), line: 3, seq: 3, msg: "llm/retry: retryId is empty"},
		{name: "llm/retry chain starts at 2", log: render(rStart, rTurn1, rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":2,"maxRetries":2,"delayMs":1}`}), line: 3, seq: 3, msg: `llm/retry 2 starts chain "a": a chain starts at retry 1`},
		{name: "llm/retry skips a number", log: render(rStart, rTurn1,
			rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`},
			rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":3,"maxRetries":3,"delayMs":1}`}), line: 4, seq: 4, msg: `llm/retry 3 of chain "a" after retry 1: retry numbers in a chain go up by one`},
		{name: "llm/retry resumes an ended chain", log: render(rStart, rTurn1,
			rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`},
			rTurnEnd1,
			rec{session.TypeTurnStart, `{"turn":2,"prompt":[],"text":""}`},
			rec{session.TypeLLMRetry, `{"turn":2,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`}), line: 6, seq: 6, msg: `llm/retry of chain "a", which ended earlier: a chain keeps one retryId`},
		{name: "llm/retry resets a chain carried over a crash", log: render(rStart, rTurn1,
			rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`},
			rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"ABORTED"},"interrupted":true}`},
			rec{session.TypeTurnStart, `{"turn":2,"prompt":[],"text":""}`},
			rec{session.TypeLLMRetry, `{"turn":2,"step":1,"retryId":"b","retry":1,"maxRetries":3,"delayMs":1}`}), line: 6, seq: 6, msg: `llm/retry starts chain "b" while chain "a", left unfinished by an interrupted turn, has retries left to count: a restart must not reset the retry budget`},
		{name: "llm/retry skips a number of a carried chain", log: render(rStart, rTurn1,
			rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`},
			rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"ABORTED"},"interrupted":true}`},
			rec{session.TypeTurnStart, `{"turn":2,"prompt":[],"text":""}`},
			rec{session.TypeLLMRetry, `{"turn":2,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`}), line: 6, seq: 6, msg: `llm/retry 1 of chain "a" after retry 1: retry numbers in a chain go up by one`},
		{name: "llm/retry with a negative delay", log: render(rStart, rTurn1, rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":2,"delayMs":-5}`}), line: 3, seq: 3, msg: "llm/retry: maxRetries 2, delayMs -5, policyRetry 0: none may be negative"},
		{name: "compaction replacing a negative number", log: render(rStart, rTurn1, rStep1, rec{session.TypeCompaction, `{"turn":1,"step":1,"summary":"s","replaced":-3}`}), line: 4, seq: 4, msg: "compaction replaces -3 messages: the count is not negative"},
		{name: "compaction of a negative step", log: render(rStart, rTurn1, rStep1, rec{session.TypeCompaction, `{"turn":1,"step":-1,"summary":"s","replaced":1}`}), line: 4, seq: 4, msg: "compaction for step -1: steps count from 1"},
		{name: "compaction with a negative size", log: render(rStart, rTurn1, rStep1, rec{session.TypeCompaction, `{"turn":1,"step":1,"summary":"s","replaced":1,"beforeChars":-1}`}), line: 4, seq: 4, msg: "compaction sizes -1 and 0: sizes are not negative"},
		{name: "llm/retry-started without llm/retry", log: render(rStart, rTurn1, rec{session.TypeLLMRetryStarted, `{"turn":1,"retryId":"a","retry":1}`}), line: 3, seq: 3, msg: `llm/retry-started for "a" retry 1, but turn 1 has no llm/retry`},
		{name: "llm/retry-started for another retry", log: render(rStart, rTurn1,
			rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`},
			rec{session.TypeLLMRetryStarted, `{"turn":1,"retryId":"a","retry":2}`}), line: 4, seq: 4, msg: `llm/retry-started for "a" retry 2, but the last llm/retry is "a" retry 1`},
		{name: "llm/retry-started twice", log: render(rStart, rTurn1,
			rec{session.TypeLLMRetry, `{"turn":1,"step":1,"retryId":"a","retry":1,"maxRetries":3,"delayMs":1}`},
			rec{session.TypeLLMRetryStarted, `{"turn":1,"retryId":"a","retry":1}`},
			rec{session.TypeLLMRetryStarted, `{"turn":1,"retryId":"a","retry":1}`}), line: 5, seq: 5, msg: `llm/retry-started for "a" retry 1 again`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ld, err := session.Parse(strings.NewReader(tt.log), "t.jsonl")
			ie, ok := errors.AsType[*session.InvariantError](err)
			if !ok {
				t.Fatalf("Parse = %+v, %v; want an *InvariantError", ld, err)
			}
			want := &session.InvariantError{Path: "t.jsonl", Line: tt.line, Seq: tt.seq, Msg: tt.msg}
			if tt.prefix && strings.HasPrefix(ie.Msg, tt.msg) {
				want.Msg = ie.Msg
			}
			if diff := cmp.Diff(want, ie); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if ld != nil {
				t.Errorf("Parse returned %+v with the error, want nil", ld)
			}
		})
	}
}

func TestInvariantError_Error(t *testing.T) {
	log := render(rStart, rTurn1) + line(3, session.TypeStepStart, rStep1.data) + line(3, session.TypeStepEnd, rStepEnd1.data)
	_, err := session.Parse(strings.NewReader(log), "sessions/abc.jsonl")
	if got, want := err.Error(), "sessions/abc.jsonl:4: seq 3 after 3: seq must strictly increase"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e := &session.InvariantError{Line: 2, Seq: 2, Msg: "step/start for turn 1 outside a turn"}
	if got, want := e.Error(), "event 2: step/start for turn 1 outside a turn"; got != want {
		t.Errorf("Error() without a path = %q, want %q", got, want)
	}
}

package session_test

import (
	"fmt"
	"strings"

	"github.com/rebound-agent/rebound/session"
)

// rec is one fixture event: its type and its data as JSON.
type rec struct{ typ, data string }

// line renders one log line with a fixed time, so fixtures can set any seq.
func line(seq int64, typ, data string) string {
	return fmt.Sprintf(`{"seq":%d,"v":1,"time":"2000-01-01T00:00:00Z","type":%q,"data":%s}`+"\n", seq, typ, data)
}

// render renders records as log lines with seq 1, 2, 3…
func render(recs ...rec) string {
	var b strings.Builder
	for i, r := range recs {
		b.WriteString(line(int64(i+1), r.typ, r.data))
	}
	return b.String()
}

// Fixture records for turn 1 and its first step.
var (
	rStart    = rec{session.TypeSessionStart, `{"sessionId":"s1","cwd":"/w"}`}
	rTurn1    = rec{session.TypeTurnStart, `{"turn":1,"prompt":[{"type":"text","text":"hi"}],"text":"hi"}`}
	rStep1    = rec{session.TypeStepStart, `{"turn":1,"step":1}`}
	rChunk1   = rec{session.TypeAssistantChunk, `{"turn":1,"step":1,"text":"Hel"}`}
	rMessage1 = rec{session.TypeAssistantMessage, `{"turn":1,"step":1,"messageId":"m1","text":"Hello"}`}
	rStepEnd1 = rec{session.TypeStepEnd, `{"turn":1,"step":1,"outcome":"ok"}`}
	// rMessageCalls1 commits a reply that asks for tool calls c1 and c2.
	rMessageCalls1 = rec{session.TypeAssistantMessage, `{"turn":1,"step":1,"messageId":"m1","text":"Let me look.","finishReason":"tool_calls","toolCalls":[{"id":"c1","name":"x","arguments":"{}"},{"id":"c2","name":"y","arguments":"{}"}]}`}
	rStepFail1     = rec{session.TypeStepEnd, `{"turn":1,"step":1,"outcome":"failed","failure":{"code":"SERVER"}}`}
	rTurnEnd1      = rec{session.TypeTurnEnd, `{"turn":1,"stopReason":"end_turn"}`}
)

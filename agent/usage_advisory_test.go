package agent

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// sseBodies answers the n-th chat request (from 0) with bodies[n], a raw
// event stream, or the last body once they run out; any other request
// (the model list) with 404.
type sseBodies struct {
	mu     sync.Mutex
	n      int
	bodies []string
}

func (d *sseBodies) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return &http.Response{StatusCode: 404, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
	}
	d.mu.Lock()
	body := d.bodies[min(d.n, len(d.bodies)-1)]
	d.n++
	d.mu.Unlock()
	h := http.Header{"Content-Type": {"text/event-stream"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// Usage is advisory. A reply whose trailing usage chunk has counts written
// "12" or 12.0, a cost as a string, or an object where a count belongs, is
// the reply: committed as sent, its tool call run; and a cost too large to
// round finitely is dropped, so the step record is written and the next
// turn works too. Through the real stream parser.
func TestAgent_UnreadableUsageKeepsTheReplyAndItsTools(t *testing.T) {
	const toolReply = `data: {"choices":[{"index":0,"delta":{"content":"Reading }"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n" +
		`data: {"choices":[],"usage":{"prompt_tokens":"12","completion_tokens":12.0,"cost":"0.001","prompt_tokens_details":{"cached_tokens":{}}}}` + "\n\n" +
		"data: [DONE]\n\n"
	done := func(usage string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":"stop"}],"usage":` + usage + "}\n\ndata: [DONE]\n\n"
	}
	d := &sseBodies{bodies: []string{toolReply, done(`{"prompt_tokens":20,"completion_tokens":2,"cost":4e298}`), done(`{"prompt_tokens":"x","cost":1.7976931348623157e308}`)}}
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://usage.invalid/v1", APIKey: "sk-test-0123456789", HTTPClient: d})
	a := testAgent(t, Config{Provider: p, ContextWindow: 1000})
	id := newSession(t, a)
	for _, prompt := range []string{"read x", "again"} {
		ed := &editor{}
		resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}}, ed)
		if err != nil || resp.StopReason != acp.StopEndTurn {
			t.Fatalf("Prompt(%q) = %+v, %v; want end_turn", prompt, resp, err)
		}
		for _, u := range ed.updates {
			if c := u.Cost; c != nil && (math.IsInf(c.Amount, 0) || math.IsNaN(c.Amount)) {
				t.Errorf("usage_update cost %v", c.Amount)
			}
		}
	}
	events := mustLoad(t, a, id)
	var results, ends int
	var texts []string
	for _, ev := range events {
		switch ev.Type {
		case session.TypeToolResult:
			results++
		case session.TypeStepEnd:
			var end session.StepEnd
			if err := json.Unmarshal(ev.Data, &end); err != nil {
				t.Fatal(err)
			}
			if end.Outcome != session.OutcomeOK {
				t.Errorf("step/end %s, want every step ok", ev.Data)
			}
			ends++
		case session.TypeAssistantMessage:
			var m session.AssistantMessage
			if err := json.Unmarshal(ev.Data, &m); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, m.Text)
		}
	}
	if results != 1 || ends != 3 {
		t.Errorf("%d tool results, %d step ends; want the tool run once, three steps ended", results, ends)
	}
	if want := []string{"Reading }", "Done.", "Done."}; strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("committed %q, want %q", texts, want)
	}
}

// A cost from a provider that bypasses the adapter's bounds, or read back
// from a log, never makes the session's cost or its rounding Inf or NaN:
// a step's unbelievable figure is dropped, the session's total clamped.
func TestUsageUpdate_CostStaysFinite(t *testing.T) {
	req := llm.Request{Model: "gpt-4o"}
	for _, c := range []float64{4e298, math.MaxFloat64, math.Inf(1), math.NaN(), -1, 1e12, 5e11} {
		for _, prior := range []sessionUsage{{}, {cost: 1e12, costed: true}, sessionUsageOf(&session.StepUsage{Cost: &[]float64{math.MaxFloat64}[0]})} {
			cost := c
			u, su, _ := usageUpdate(req, &llm.Reply{Usage: &llm.Usage{PromptTokens: 1, Cost: &cost}}, 0, Prices{}, prior)
			if math.IsInf(su.cost, 0) || math.IsNaN(su.cost) || su.cost < 0 || su.cost > maxSessionCost {
				t.Errorf("cost %v after %+v: session total %v", c, prior, su.cost)
			}
			if u.Cost != nil && (math.IsInf(u.Cost.Amount, 0) || math.IsNaN(u.Cost.Amount)) {
				t.Errorf("cost %v after %+v: shown %v", c, prior, u.Cost.Amount)
			}
			if _, err := json.Marshal(u); err != nil {
				t.Errorf("cost %v after %+v: the update cannot be written: %v", c, prior, err)
			}
		}
	}
	// A session's own step figures add up as before.
	half := 0.5
	_, su, _ := usageUpdate(req, &llm.Reply{Usage: &llm.Usage{Cost: &half}}, 0, Prices{}, sessionUsage{cost: 1, costed: true})
	if su.cost != 1.5 {
		t.Errorf("1 + 0.5 = %v", su.cost)
	}
}

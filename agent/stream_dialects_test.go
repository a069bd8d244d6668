package agent

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// What the editor sees of the provider stream's dialects (issue 31), through
// the real stream parser: a think block in the content is a thought, not
// the reply; a finish reason that says the attempt broke off (Zhipu's
// network_error) is retried, not committed as a whole answer; one that
// says a filter stopped the reply (Zhipu's sensitive) is a refusal.
func TestAgent_StreamDialects(t *testing.T) {
	const thinkReply = `data: {"choices":[{"index":0,"delta":{"content":"<think>\nplan it"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"</think>\n\nThe answer."},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	const brokeOff = `data: {"choices":[{"index":0,"delta":{"content":"The first"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"network_error"}]}` + "\n\ndata: [DONE]\n\n"
	const whole = `data: {"choices":[{"index":0,"delta":{"content":"The first step."},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	const sensitive = `data: {"choices":[{"index":0,"delta":{"content":"Regarding"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"sensitive"}]}` + "\n\ndata: [DONE]\n\n"
	tests := []struct {
		name     string
		bodies   []string
		stop     acp.StopReason
		requests int
		thought  string // the thought chunks, joined
		reply    string // the committed reply
	}{
		{"a think block is a thought", []string{thinkReply}, acp.StopEndTurn, 1, "plan it", "The answer."},
		{"a broken-off reply is retried", []string{brokeOff, whole}, acp.StopEndTurn, 2, "", "The first step."},
		{"a filtered reply is a refusal", []string{sensitive}, acp.StopRefusal, 1, "", "Regarding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &sseBodies{bodies: tt.bodies}
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://dialects.invalid/v1", APIKey: "sk-test-0123456789", HTTPClient: d})
				a := testAgent(t, Config{Provider: p, Recovery: recovery.Config{Policy: recovery.Policy{MaxRetries: 2,
					InitialDelay: time.Second, MaxDelay: 4 * time.Second, MaxRetryAfter: 10 * time.Second, Retryable: recovery.DefaultRetryable}}})
				id := newSession(t, a)
				ed := &editor{}
				resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("q")}}, ed)
				if err != nil || resp.StopReason != tt.stop {
					t.Fatalf("Prompt = %+v, %v; want %s", resp, err, tt.stop)
				}
				if d.n != tt.requests {
					t.Errorf("%d requests, want %d", d.n, tt.requests)
				}
				var thought strings.Builder
				for _, u := range ed.updates {
					if u.SessionUpdate == acp.UpdateAgentThoughtChunk {
						thought.WriteString(u.Content.Text)
					}
					if u.SessionUpdate == acp.UpdateAgentMessageChunk && strings.Contains(u.Content.Text, "think>") {
						t.Errorf("the reply shows a tag: %q", u.Content.Text)
					}
				}
				if thought.String() != tt.thought {
					t.Errorf("thoughts %q, want %q", thought.String(), tt.thought)
				}
				msgs, err := session.Conversation(mustLoad(t, a, id))
				if err != nil {
					t.Fatal(err)
				}
				if last := msgs[len(msgs)-1]; last.Text != tt.reply || last.Reasoning != tt.thought {
					t.Errorf("committed reply %q, thoughts %q; want %q, %q", last.Text, last.Reasoning, tt.reply, tt.thought)
				}
			})
		})
	}
}

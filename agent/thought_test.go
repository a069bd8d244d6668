package agent

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// cut streams chunks, then fails as a dropped connection does.
func cut(chunks ...llm.Chunk) func(context.Context, llm.Request) (llm.Stream, error) {
	return func(context.Context, llm.Request) (llm.Stream, error) {
		i := 0
		return funcStream(func() (llm.Chunk, error) {
			if i == len(chunks) {
				return llm.Chunk{}, io.ErrUnexpectedEOF
			}
			i++
			return chunks[i-1], nil
		}), nil
	}
}

func think(s string) llm.Chunk { return llm.Chunk{Reasoning: s} }

// A stream cut mid-reasoning is retried, and the retry reasons again from
// the start: whatever the mode, the editor is shown each thought once, and
// the committed message holds what was shown.
func TestThoughts_ShownOnceAfterARetry(t *testing.T) {
	const said = "The user greets me and asks how to run the tests; "
	cutMidThought := cut(think(said), think("answer bri"))
	for _, tt := range []struct {
		name  string
		live  bool
		retry func(context.Context, llm.Request) (llm.Stream, error)
		want  string // the thoughts the editor is shown, joined
	}{
		{"live, the retry restarts the thought", true,
			reply(think(said), think("answer briefly."), llm.Chunk{Content: "Hello!"}, llm.Chunk{FinishReason: llm.FinishStop}),
			said + "answer briefly."},
		{"live, the retry repeats the thought's end", true,
			reply(think("how to run the tests; answer briefly."), llm.Chunk{Content: "Hello!"}, llm.Chunk{FinishReason: llm.FinishStop}),
			said + "answer briefly."},
		{"live, the retry's restart stops short", true,
			reply(think("The user greets me and asks"), llm.Chunk{Content: "Hello!"}, llm.Chunk{FinishReason: llm.FinishStop}),
			said + "answer bri"},
		{"live, a short repeat of the thought's end may be a new thought: kept", true,
			reply(think("answer briefly."), llm.Chunk{Content: "Hello!"}, llm.Chunk{FinishReason: llm.FinishStop}),
			said + "answer bri\n\nanswer briefly."},
		{"live, the retry words it anew", true,
			reply(think("A greeting: reply in kind."), llm.Chunk{Content: "Hello!"}, llm.Chunk{FinishReason: llm.FinishStop}),
			said + "answer bri\n\nA greeting: reply in kind."},
		{"live, the retry's thought is held while it could be a repeat", true,
			reply(think("answer"), llm.Chunk{Content: "Hello!"}, llm.Chunk{FinishReason: llm.FinishStop}),
			said + "answer bri\n\nanswer"},
		{"held", false,
			reply(think(said), think("answer briefly."), llm.Chunk{Content: "Hello!"}, llm.Chunk{FinishReason: llm.FinishStop}),
			said + "answer briefly."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){cutMidThought, tt.retry}}
				a := testAgent(t, Config{Provider: p, Live: tt.live, Recovery: recovery.Config{Policy: recovery.Policy{
					MaxRetries: 1, InitialDelay: time.Second, MaxDelay: time.Second, Retryable: recovery.DefaultRetryable}}})
				id := newSession(t, a)
				ed := &editor{}
				resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}}, ed)
				if err != nil || resp.StopReason != acp.StopEndTurn {
					t.Fatalf("Prompt = %+v, %v", resp, err)
				}
				var thoughts, text strings.Builder
				ids := map[string]bool{}
				for _, u := range ed.updates {
					switch u.SessionUpdate {
					case acp.UpdateAgentThoughtChunk:
						if text.Len() > 0 {
							t.Errorf("thought %q shown after the reply began", u.Content.Text)
						}
						thoughts.WriteString(u.Content.Text)
						ids[u.MessageID] = true
					case acp.UpdateAgentMessageChunk:
						text.WriteString(u.Content.Text)
						ids[u.MessageID] = true
					}
				}
				if thoughts.String() != tt.want || text.String() != "Hello!" {
					t.Errorf("shown thoughts %q, text %q; want %q, %q", thoughts.String(), text.String(), tt.want, "Hello!")
				}
				if len(ids) != 1 {
					t.Errorf("messageIds %v, want one", ids)
				}
				var msg session.AssistantMessage
				for _, ev := range mustLoad(t, a, id) {
					if ev.Type == session.TypeAssistantMessage {
						if err := json.Unmarshal(ev.Data, &msg); err != nil {
							t.Fatal(err)
						}
					}
				}
				if msg.Reasoning != tt.want || msg.Text != "Hello!" {
					t.Errorf("committed reasoning %q, text %q; want what was shown", msg.Reasoning, msg.Text)
				}
			})
		})
	}
}

func TestThoughtResumer_StartsAnewThoughtApart(t *testing.T) {
	for _, tt := range []struct{ shown, retry, want string }{
		{"Cut here", "Other words.", "\n\nOther words."},
		{"Ends a line\n", "Other words.", "Other words."},
		{"Cut here, after a long enough thought", "Cut here, after a long enough thought and on.", " and on."},
		{"Cut here", "Cut here and on.", "\n\nCut here and on."}, // too short to be certainly a repeat
		{"Cut here", "", ""},
	} {
		r := thoughtResumer(tt.shown)
		if got := r.feed(tt.retry) + r.finish(); got != tt.want {
			t.Errorf("after %q, %q shows %q, want %q", tt.shown, tt.retry, got, tt.want)
		}
	}
}

package agent

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

func limited(context.Context, llm.Request) (llm.Stream, error) {
	return nil, &llm.Error{Status: 429, Message: "slow down"}
}

// noticesCaps are the capabilities of an editor that shows notices.
const noticesCaps = `{"session":{"notices":{}}}`

// Which carrier each agent.wait_status gives a client with and without
// notices: the status tool call where nothing else would show the wait.
func TestStatus_Carriers(t *testing.T) {
	for _, tt := range []struct {
		choice               string
		notices              bool
		wantNotice, wantCall bool
	}{
		{WaitStatusAuto, false, false, true},
		{WaitStatusAuto, true, true, false},
		{WaitStatusNotice, false, false, false},
		{WaitStatusNotice, true, true, false},
		{WaitStatusToolCall, false, false, true},
		{WaitStatusToolCall, true, false, true},
		{WaitStatusMeta, true, false, false},
		{WaitStatusMeta, false, false, false},
	} {
		t.Run(tt.choice, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){limited, text("recovered")}}
				a := testAgent(t, Config{Provider: p, WaitStatus: tt.choice, Recovery: recovery.Config{Policy: recovery.Policy{
					MaxRetries: 1, InitialDelay: 3 * time.Second, MaxDelay: 3 * time.Second, Retryable: recovery.DefaultRetryable}}})
				id := newSession(t, a)
				var ed acp.Client = &editor{}
				if tt.notices {
					ed = &capsEditor{caps: noticesCaps}
				}
				if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}}, ed); err != nil {
					t.Fatal(err)
				}
				var updates []acp.SessionUpdate
				if e, ok := ed.(*capsEditor); ok {
					updates = e.updates
				} else {
					updates = ed.(*editor).updates
				}
				var notices, calls, meta int
				var statusIDs []string
				for _, u := range updates {
					switch {
					case u.SessionUpdate == acp.UpdateNotice:
						notices++
					case strings.HasPrefix(u.ToolCallID, statusIDPrefix):
						calls++
						statusIDs = append(statusIDs, u.ToolCallID)
					case u.SessionUpdate == acp.UpdateSessionInfo && u.Meta[RetryMetaKey] != nil:
						meta++
					case u.SessionUpdate == acp.UpdateAgentMessageChunk:
						for _, id := range statusIDs {
							if u.MessageID == id {
								t.Errorf("the reply's messageId is the status's")
							}
						}
					}
				}
				if (notices > 0) != tt.wantNotice || (calls > 0) != tt.wantCall || meta == 0 {
					t.Errorf("notices %d, status calls %d, meta %d; want notice %v, call %v, meta always", notices, calls, meta, tt.wantNotice, tt.wantCall)
				}
				// The status is never part of the model's history.
				for _, m := range p.reqs[len(p.reqs)-1].Messages {
					if strings.Contains(m.Content, "Rate limited") || strings.Contains(m.ToolCallID, statusIDPrefix) {
						t.Errorf("the model's request holds the status: %+v", m)
					}
				}
			})
		})
	}
}

func filtered(context.Context, llm.Request) (llm.Stream, error) {
	return nil, &llm.Error{Status: 400, Code: "content_filter", Message: "The prompt was filtered by the content policy."}
}

// A prompt the content filter refuses ends as a refusal, and a person is
// told why: a notice where notices are shown, else a failed status tool
// call, which also closes a wait still open before the refusal; its title
// says what happened, its content the provider's reason.
func TestStatus_Refusal(t *testing.T) {
	const reason = "The prompt was filtered by the content policy"
	for _, tt := range []struct {
		name    string
		notices bool
		answers []func(context.Context, llm.Request) (llm.Stream, error)
	}{
		{"notice", true, []func(context.Context, llm.Request) (llm.Stream, error){filtered}},
		{"status call", false, []func(context.Context, llm.Request) (llm.Stream, error){filtered}},
		{"status call after a wait", false, []func(context.Context, llm.Request) (llm.Stream, error){limited, filtered}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := testAgent(t, Config{Provider: &script{answers: tt.answers}, Recovery: recovery.Config{Policy: recovery.Policy{
					MaxRetries: 1, InitialDelay: time.Second, MaxDelay: time.Second, Retryable: recovery.DefaultRetryable}}})
				id := newSession(t, a)
				ne := &capsEditor{caps: noticesCaps}
				ed := &ne.editor
				var c acp.Client = ed
				if tt.notices {
					c = ne
				}
				resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}}, c)
				if err != nil || resp.StopReason != acp.StopRefusal {
					t.Fatalf("Prompt = %+v, %v; want a refusal", resp, err)
				}
				calls := map[string]acp.SessionUpdate{} // the last update of each status call
				var notices []acp.SessionUpdate
				for _, u := range ed.updates {
					switch {
					case u.SessionUpdate == acp.UpdateNotice:
						notices = append(notices, u)
					case strings.HasPrefix(u.ToolCallID, statusIDPrefix):
						calls[u.ToolCallID] = u
					}
				}
				if tt.notices {
					if len(notices) != 1 || len(calls) != 0 || !strings.Contains(notices[0].Description, reason) || notices[0].Meta[RefusalMetaKey] == nil {
						t.Fatalf("notices %+v, status calls %d; want one notice with the reason and its facts", notices, len(calls))
					}
					return
				}
				refused := 0
				for _, u := range calls {
					if u.Status != string(acp.ToolStatusFailed) {
						t.Errorf("status %q left %s", u.Title, u.Status)
					}
					if len(u.ToolContent) == 1 && u.ToolContent[0].Content != nil && strings.Contains(u.ToolContent[0].Content.Text, reason) &&
						strings.HasPrefix(u.Title, "The provider's content filter refused") {
						refused++
					}
				}
				if refused != 1 || len(notices) != 0 {
					t.Errorf("status calls %+v, notices %d; want one failed status with the reason", calls, len(notices))
				}
			})
		})
	}
}

// A retry's status quotes the provider only when the provider said
// something: a refused connection (nothing answered) and Rebound's own
// watchdogs are what happened, not the provider's words.
func TestRetryDetail_ProviderSaidOnlyWhenItDid(t *testing.T) {
	dial := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a dial error", fmt.Errorf("chat completion request: %w", dial), "What happened: chat completion request: Post"},
		{"a watchdog", fmt.Errorf("%w (3s)", recovery.ErrFirstTokenTimeout), "What happened: "},
		{"an error body", &llm.Error{Status: 503, Message: "busy", Body: []byte(`{"error":{"message":"busy"}}`)}, "The provider said: busy"},
		{"an error inside the stream", &llm.Error{Status: 200, InStream: true, Message: "boom", Body: []byte(`{"error":{"message":"boom"}}`)}, "The provider said: boom"},
	}
	for _, tt := range tests {
		if got := recovery.Said(recovery.Classify(tt.err)); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: recovery.Said = %q, want it to start %q", tt.name, got, tt.want)
		}
	}
}

package acp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

// answeringAgent is a fakeAgent that is told of answered sessions.
type answeringAgent struct {
	*fakeAgent
	answered func(ctx context.Context, sessionID string, c acp.Client)
}

func (a answeringAgent) SessionAnswered(ctx context.Context, sessionID string, c acp.Client) {
	a.answered(ctx, sessionID, c)
}

// TestServer_SessionAnsweredAfterTheAnswer: the agent is told of a
// session/new or load only once its answer is written, so an update it
// sends then comes after the answer; a failed request tells it nothing.
func TestServer_SessionAnsweredAfterTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loads := 0
		agent := answeringAgent{
			fakeAgent: &fakeAgent{
				NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
					return acp.NewSessionResponse{SessionID: "s1"}, nil
				},
				LoadSessionFunc: func(context.Context, acp.LoadSessionRequest, acp.Client) (acp.LoadSessionResponse, error) {
					if loads++; loads > 1 {
						return acp.LoadSessionResponse{}, errors.New("no such session")
					}
					return acp.LoadSessionResponse{}, nil
				},
			},
			answered: func(ctx context.Context, id string, c acp.Client) {
				if err := c.Update(ctx, id, textUpdate("after "+id)); err != nil {
					t.Errorf("Update: %v", err)
				}
			},
		}
		w := serve(t, t.Context(), agent, acp.Config{})
		update := func(id string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"after %s"}}}}`, id, id)
		}
		w.send(request(1, acp.MethodSessionNew, map[string]any{"cwd": "/w", "mcpServers": []any{}}))
		sameJSON(t, "session/new answer", `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`, w.recv())
		sameJSON(t, "then", update("s1"), w.recv())
		w.send(request(2, acp.MethodSessionLoad, map[string]any{"sessionId": "s2", "cwd": "/w", "mcpServers": []any{}}))
		sameJSON(t, "session/load answer", `{"jsonrpc":"2.0","id":2,"result":{}}`, w.recv())
		sameJSON(t, "then", update("s2"), w.recv())
		w.send(request(3, acp.MethodSessionLoad, map[string]any{"sessionId": "s3", "cwd": "/w", "mcpServers": []any{}}))
		if got := w.recv(); !strings.Contains(got, `"id":3,"error"`) {
			t.Errorf("failed session/load answered %s", got)
		}
		if err := w.end(); err != nil { // and nothing after the error
			t.Errorf("Serve() = %v", err)
		}
	})
}

package acp_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
)

// The read goroutine never waits for the agent. While session/new or
// session/load takes 10 s (a 120 MB log to read), initialize and a
// session/cancel for another session's turn are handled at once; the slow
// request is answered when the agent is done.
func TestServer_SlowAgentDoesNotBlockReader(t *testing.T) {
	const slow = 10 * time.Second
	tests := []struct {
		method string
		params map[string]any
	}{
		{acp.MethodSessionNew, map[string]any{"cwd": "/w", "mcpServers": []any{}}},
		{acp.MethodSessionLoad, map[string]any{"sessionId": "big", "cwd": "/w", "mcpServers": []any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				agent := &fakeAgent{
					NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
						time.Sleep(slow)
						return acp.NewSessionResponse{SessionID: "new"}, nil
					},
					LoadSessionFunc: func(context.Context, acp.LoadSessionRequest, acp.Client) (acp.LoadSessionResponse, error) {
						time.Sleep(slow)
						return acp.LoadSessionResponse{}, nil
					},
					PromptFunc: func(ctx context.Context, _ acp.PromptRequest, _ acp.Client) (acp.PromptResponse, error) {
						<-ctx.Done()
						return acp.PromptResponse{}, ctx.Err()
					},
				}
				w := serve(t, t.Context(), agent, acp.Config{})
				start := time.Now()
				w.send(prompt(1, "other", "go"))
				synctest.Wait() // the turn runs
				w.send(request(2, tt.method, tt.params))
				w.send(request(3, acp.MethodInitialize, map[string]any{"protocolVersion": 1}))
				if line, at := w.recv(), time.Since(start); member(t, line, "id") != "3" || at != 0 {
					t.Fatalf("first answer, after %v: %.200s\nwant initialize's (id 3) at once", at, line)
				}
				w.send(cancel("other"))
				line, at := w.recv(), time.Since(start)
				sameJSON(t, "next answer", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, line)
				if at != 0 {
					t.Errorf("the cancelled turn answered after %v, want at once", at)
				}
				line, at = w.recv(), time.Since(start)
				if member(t, line, "id") != "2" || member(t, line, "result") == "" || at != slow {
					t.Errorf("answer after %v: %s\nwant %s's result after %v", at, line, tt.method, slow)
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

package acp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
)

// Updates are written before the reply, in order, and the agent gets the
// decoded prompt.
func TestServer_PromptUpdatesBeforeReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got acp.PromptRequest
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			got = req
			for _, s := range []string{"Hel", "lo"} {
				if err := c.Update(ctx, req.SessionID, textUpdate(s)); err != nil {
					return acp.PromptResponse{}, err
				}
			}
			return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(request(1, acp.MethodSessionPrompt, map[string]any{
			"sessionId": "s",
			"prompt": []any{
				map[string]any{"type": "text", "text": "hi"},
				map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///a.go", "text": "package a"}},
			},
		}))
		for i, want := range []string{
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`,
		} {
			sameJSON(t, fmt.Sprintf("line %d", i), want, w.recv())
		}
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
		src := "package a"
		want := acp.PromptRequest{SessionID: "s", Prompt: []acp.ContentBlock{
			acp.TextBlock("hi"),
			{Type: "resource", Resource: &acp.EmbeddedResource{URI: "file:///a.go", Text: &src}},
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("prompt the agent got (-want +got):\n%s", diff)
		}
	})
}

// A second prompt while the session's turn runs is refused; the running
// turn is untouched and completes. Other sessions are not affected.
func TestServer_SecondPromptWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var firstErr error
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			if req.Prompt[0].Text == "first" {
				<-release
				firstErr = ctx.Err()
			}
			return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "first"))
		w.send(prompt(2, "s", "second"))
		sameJSON(t, "second prompt",
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32003,"message":"A turn is already running in session s; wait for its reply or send session/cancel","data":{"sessionId":"s","reason":"session_busy"}}}`,
			w.recv())
		w.send(prompt(3, "other", "elsewhere"))
		sameJSON(t, "prompt in another session", `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, w.recv())
		close(release)
		sameJSON(t, "first prompt", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`, w.recv())
		if firstErr != nil {
			t.Errorf("first turn's ctx: %v, want not cancelled", firstErr)
		}
		w.send(prompt(4, "s", "after"))
		sameJSON(t, "prompt after the turn ended", `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// session/cancel ends the turn with stopReason cancelled, whatever the
// agent's unwinding returns, and the agent sees the cause ErrCancelled.
func TestServer_CancelDuringPrompt(t *testing.T) {
	tests := []struct {
		name   string
		unwind func(ctx context.Context) (acp.PromptResponse, error)
	}{
		{"agent returns ctx error", func(ctx context.Context) (acp.PromptResponse, error) {
			return acp.PromptResponse{}, ctx.Err()
		}},
		{"agent returns a wrapped failure", func(ctx context.Context) (acp.PromptResponse, error) {
			return acp.PromptResponse{}, fmt.Errorf("provider: %w", context.Cause(ctx))
		}},
		{"agent answers cancelled", func(ctx context.Context) (acp.PromptResponse, error) {
			return acp.PromptResponse{StopReason: acp.StopCancelled}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var cause error
				agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
					if err := c.Update(ctx, req.SessionID, textUpdate("working")); err != nil {
						return acp.PromptResponse{}, err
					}
					<-ctx.Done()
					cause = context.Cause(ctx)
					return tt.unwind(ctx)
				}}
				w := serve(t, t.Context(), agent, acp.Config{})
				w.send(prompt(1, "s", "go"))
				w.recv() // the update: the turn is running
				w.send(cancel("s"))
				sameJSON(t, "reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, w.recv())
				if cause != acp.ErrCancelled {
					t.Errorf("cancel cause = %v, want %v", cause, acp.ErrCancelled)
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

// The turn is registered before its goroutine starts: a cancel read in the
// same chunk as the prompt still reaches it.
func TestServer_CancelRightAfterPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var cause error
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			<-gate
			if ctx.Err() == nil {
				return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
			}
			cause = context.Cause(ctx)
			return acp.PromptResponse{}, ctx.Err()
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "go"), cancel("s"))
		synctest.Wait() // both lines handled; the turn waits at the gate
		close(gate)
		sameJSON(t, "reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, w.recv())
		if cause != acp.ErrCancelled {
			t.Errorf("cancel cause = %v, want %v", cause, acp.ErrCancelled)
		}
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// An editor may send cancel and the next prompt back to back. The new
// prompt is not refused: it waits for the cancelled turn to reply, so the
// agent never runs two turns of one session at once.
func TestServer_PromptAfterCancelWaitsForPreviousTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unwind := make(chan struct{})
		running := 0
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			running++
			defer func() { running-- }()
			if running > 1 {
				t.Errorf("%d turns of one session ran at once", running)
			}
			if req.Prompt[0].Text == "first" {
				<-ctx.Done()
				<-unwind // a slow unwind: the reply is not sent yet
				return acp.PromptResponse{}, ctx.Err()
			}
			return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "first"))
		w.send(cancel("s"), prompt(2, "s", "second"))
		synctest.Wait()
		select {
		case line := <-w.lines:
			t.Fatalf("output before the cancelled turn unwound: %s", line)
		default:
		}
		close(unwind)
		sameJSON(t, "first reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, w.recv())
		sameJSON(t, "second reply", `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// session/cancel sent with an id by mistake still cancels and is answered.
func TestServer_CancelAsRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			<-ctx.Done()
			return acp.PromptResponse{}, ctx.Err()
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "go"))
		w.send(request(2, acp.MethodSessionCancel, map[string]any{"sessionId": "s"}))
		got := []string{w.recv(), w.recv()} // two goroutines answer: order not fixed
		if strings.Contains(got[0], `"id":1`) {
			got[0], got[1] = got[1], got[0]
		}
		sameJSON(t, "cancel reply", `{"jsonrpc":"2.0","id":2,"result":null}`, got[0])
		sameJSON(t, "prompt reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, got[1])
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

package acp_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

func TestServer_PromptParams(t *testing.T) {
	text := map[string]any{"type": "text", "text": "hi"}
	tests := []struct {
		name    string
		params  any
		wantMsg string
	}{
		{"unknown block type", map[string]any{"sessionId": "s", "prompt": []any{map[string]any{"type": "video"}}},
			`Invalid params: prompt[0].type "video" is not a content block type (text, image, audio, resource_link, resource)`},
		{"block type not a string", map[string]any{"sessionId": "s", "prompt": []any{text, map[string]any{"type": 3}}},
			"Invalid params: prompt[1].type must be a string, not number"},
		{"block type missing", map[string]any{"sessionId": "s", "prompt": []any{map[string]any{"text": "hi"}}},
			"Invalid params: prompt[0].type is required"},
		{"block not an object", map[string]any{"sessionId": "s", "prompt": []any{"hi"}},
			"Invalid params: prompt[0] must be an object, not string"},
		{"resource_link without uri", map[string]any{"sessionId": "s", "prompt": []any{map[string]any{"type": "resource_link", "name": "a"}}},
			"Invalid params: prompt[0].uri is required"},
		{"resource without contents", map[string]any{"sessionId": "s", "prompt": []any{map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///a"}}}},
			"Invalid params: prompt[0].resource needs text or blob"},
		{"sessionId missing", map[string]any{"prompt": []any{text}},
			"Invalid params: sessionId is required"},
		{"sessionId not a string", map[string]any{"sessionId": 5, "prompt": []any{text}},
			"Invalid params: sessionId must be a string, not number"},
		{"prompt missing", map[string]any{"sessionId": "s"},
			"Invalid params: prompt is required"},
		{"prompt not an array", map[string]any{"sessionId": "s", "prompt": "hi"},
			"Invalid params: prompt must be an array, not string"},
		{"no params", nil,
			"Invalid params: params are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &fakeAgent{}, acp.Config{}) // Prompt must not be reached
				w.send(request(1, acp.MethodSessionPrompt, tt.params))
				want, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32602, "message": tt.wantMsg}})
				sameJSON(t, "reply", string(want), w.recv())
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

func TestServer_LoadSessionParams(t *testing.T) {
	tests := []struct {
		name    string
		params  any
		wantMsg string
	}{
		{"sessionId missing", map[string]any{"cwd": "/w", "mcpServers": []any{}}, "Invalid params: sessionId is required"},
		{"relative cwd", map[string]any{"sessionId": "s", "cwd": ".", "mcpServers": []any{}}, `Invalid params: cwd must be an absolute path, got "."`},
		{"relative additional directory", map[string]any{"sessionId": "s", "cwd": "/w", "additionalDirectories": []any{"x"}, "mcpServers": []any{}}, `Invalid params: additionalDirectories[0] must be an absolute path, got "x"`},
		{"unknown session", map[string]any{"sessionId": "gone", "cwd": "/w", "mcpServers": []any{}}, "Session not found: gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				agent := &fakeAgent{LoadSessionFunc: func(_ context.Context, req acp.LoadSessionRequest, _ acp.Client) (acp.LoadSessionResponse, error) {
					return acp.LoadSessionResponse{}, acp.NewSessionNotFound(req.SessionID)
				}}
				w := serve(t, t.Context(), agent, acp.Config{})
				w.send(request(1, acp.MethodSessionLoad, tt.params))
				var got struct {
					Error struct{ Message string } `json:"error"`
				}
				if err := json.Unmarshal([]byte(w.recv()), &got); err != nil {
					t.Fatal(err)
				}
				if got.Error.Message != tt.wantMsg {
					t.Errorf("error message = %q, want %q", got.Error.Message, tt.wantMsg)
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

package acp_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

// A server listed twice, or under names that give its tools the same
// names, is refused where the session is made, loaded or resumed: the
// agent would start one and tell the model both are missing.
func TestServer_DuplicateMcpServers(t *testing.T) {
	stdio := func(name string) map[string]any { return map[string]any{"name": name, "command": "/bin/mcp"} }
	web := func(name string) map[string]any {
		return map[string]any{"type": "http", "name": name, "url": "https://mcp.example/x", "headers": []any{}}
	}
	tests := []struct {
		name    string
		servers []any
		want    string // the error message; "" for none
	}{
		{"distinct", []any{stdio("fs"), web("web"), stdio("fs2")}, ""},
		{"same name", []any{stdio("fs"), web("web"), stdio("fs")},
			`Invalid params: mcpServers[0] and mcpServers[2] are both named "fs"; each MCP server needs a name of its own`},
		{"same name, other transport", []any{stdio("fs"), web("fs")},
			`Invalid params: mcpServers[0] and mcpServers[1] are both named "fs"; each MCP server needs a name of its own`},
		{"case only", []any{web("GitHub"), stdio("github")},
			`Invalid params: mcpServers[0] ("GitHub") and mcpServers[1] ("github") differ only in case or in characters a tool name cannot hold (both name their tools mcp__github__…, ignoring case); each MCP server needs a name of its own`},
		{"same once sanitised", []any{stdio("my server"), stdio("my_server")},
			`Invalid params: mcpServers[0] ("my server") and mcpServers[1] ("my_server") differ only in case or in characters a tool name cannot hold (both name their tools mcp__my_server__…, ignoring case); each MCP server needs a name of its own`},
		{"one character per rune", []any{stdio("dé"), stdio("d.")},
			`Invalid params: mcpServers[0] ("dé") and mcpServers[1] ("d.") differ only in case or in characters a tool name cannot hold (both name their tools mcp__d___…, ignoring case); each MCP server needs a name of its own`},
		{"- and _ differ", []any{stdio("a-b"), stdio("a_b")}, ""},
	}
	methods := []struct {
		method string
		params func(servers []any) map[string]any
	}{
		{acp.MethodSessionNew, func(s []any) map[string]any { return map[string]any{"cwd": "/w", "mcpServers": s} }},
		{acp.MethodSessionLoad, func(s []any) map[string]any { return map[string]any{"sessionId": "s", "cwd": "/w", "mcpServers": s} }},
		{acp.MethodSessionResume, func(s []any) map[string]any { return map[string]any{"sessionId": "s", "cwd": "/w", "mcpServers": s} }},
	}
	for _, tt := range tests {
		for _, m := range methods {
			t.Run(tt.name+"/"+m.method, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					called := false
					agent := &lifecycleAgent{
						fakeAgent: fakeAgent{
							NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
								called = true
								return acp.NewSessionResponse{SessionID: "s"}, nil
							},
							LoadSessionFunc: func(context.Context, acp.LoadSessionRequest, acp.Client) (acp.LoadSessionResponse, error) {
								called = true
								return acp.LoadSessionResponse{}, nil
							},
						},
						ResumeFunc: func(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
							called = true
							return acp.ResumeSessionResponse{}, nil
						},
					}
					w := serve(t, t.Context(), agent, acp.Config{})
					w.send(request(1, m.method, m.params(tt.servers)))
					reply := w.recv()
					if tt.want == "" {
						if !called {
							t.Errorf("the agent was not called; reply %s", reply)
						}
					} else {
						sameJSON(t, "reply", `{"id":1,"jsonrpc":"2.0","error":{"code":-32602,"message":`+quoteJSON(tt.want)+`}}`, reply)
						if called {
							t.Error("the agent was called with the duplicated servers")
						}
					}
					if err := w.end(); err != nil {
						t.Error(err)
					}
				})
			})
		}
	}
}

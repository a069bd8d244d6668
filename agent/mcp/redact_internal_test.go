package mcp

import "testing"

func TestRedact(t *testing.T) {
	t.Parallel()
	r := newRedactor(Spec{
		URL:     "https://bob:hunter2-password@mcp.example.com/v1/sse?token=secret123&region=eu#frag-secret",
		Headers: []KV{{Name: "Authorization", Value: "Bearer header-secret-value"}},
	})
	tests := []struct{ in, want string }{
		{
			`Get "https://bob:***@mcp.example.com/v1/sse?token=secret123&region=eu": dial tcp: refused`,
			`Get "https://REDACTED@mcp.example.com/v1/sse?token=REDACTED&region=REDACTED": dial tcp: refused`,
		},
		{"see https://mcp.example.com/v1/messages?sessionId=abc&x=&flag#top ok", "see https://mcp.example.com/v1/messages?sessionId=REDACTED&x=&REDACTED#REDACTED ok"},
		{"http://host:8080", "http://host:8080"},
		{"http://host/path?", "http://host/path?"},
		{"ws://user@host?tok", "ws://REDACTED@host?REDACTED"},
		// Secrets of the spec outside any URL, decoded or in a header.
		// Short values (bob, eu) are too common to look for alone.
		{"the server said: bad token secret123 for bob in eu", "the server said: bad token REDACTED for bob in eu"},
		{"401: header-secret-value refused (Bearer header-secret-value)", "401: REDACTED refused (REDACTED)"},
		{"password hunter2-password rejected", "password REDACTED rejected"},
		{"no secrets here", "no secrets here"},
	}
	for _, tt := range tests {
		if got := r.redact(tt.in); got != tt.want {
			t.Errorf("redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

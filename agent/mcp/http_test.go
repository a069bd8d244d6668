package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/agent/mcp/mcpmock"
)

// serveHTTP serves the mock over streamable HTTP and SSE, requiring the
// header Authorization: Bearer secret.
func serveHTTP(t *testing.T) (streamable, sse string) {
	t.Helper()
	return serve(t, mcpmock.NewServer(mcpmock.Options{}))
}

func serve(t *testing.T, server *sdk.Server) (streamable, sse string) {
	t.Helper()
	get := func(*http.Request) *sdk.Server { return server }
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/sse", sdk.NewSSEHandler(get, nil))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, "no entry", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", ts.URL + "/sse"
}

func httpOptions(t *testing.T) mcp.Options {
	return mcp.Options{Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
}

func TestHTTP_ListAndCall(t *testing.T) {
	t.Parallel()
	streamable, sse := serveHTTP(t)
	auth := []mcp.KV{{Name: "Authorization", Value: "Bearer secret"}}
	set, failures := mcp.Start(t.Context(), []mcp.Spec{
		{Name: "web", Transport: mcp.TransportHTTP, URL: streamable, Headers: auth},
		{Name: "old", Transport: mcp.TransportSSE, URL: sse, Headers: auth},
	}, httpOptions(t))
	defer set.Close()
	if len(failures) > 0 {
		t.Fatalf("Start() failures: %v", failures)
	}
	if got := len(set.Tools()); got != 14 {
		t.Errorf("len(Tools()) = %d, want 14 (7 per server)", got)
	}
	for _, name := range []string{"mcp__web__echo", "mcp__old__echo"} {
		res, err := set.Call(t.Context(), name, `{"text":"over http"}`)
		if err != nil || res != (mcp.Result{Text: "over http"}) {
			t.Errorf("Call(%s) = %+v, %v", name, res, err)
		}
	}
	// The SSE session outlives Start's timeout context: a call much later
	// than StartTimeout would fail otherwise. Checked cheaply by a second
	// call after the first; the start context is already cancelled.
	if _, err := set.Call(t.Context(), "mcp__old__pid", `{}`); err != nil {
		t.Errorf("second SSE call: %v", err)
	}
}

func TestHTTP_Unauthorized(t *testing.T) {
	t.Parallel()
	streamable, sse := serveHTTP(t)
	bad := []mcp.KV{{Name: "Authorization", Value: "Bearer wrong"}}
	set, failures := mcp.Start(t.Context(), []mcp.Spec{
		{Name: "web", Transport: mcp.TransportHTTP, URL: streamable, Headers: bad},
		{Name: "old", Transport: mcp.TransportSSE, URL: sse},
	}, httpOptions(t))
	defer set.Close()
	got := map[string]string{}
	for _, f := range failures {
		got[f.Server] = f.Error()
	}
	for _, server := range []string{"web", "old"} {
		want := `MCP server "` + server + `" could not be started: the HTTP server answered 401 Unauthorized`
		if got[server] != want {
			t.Errorf("failure of %s = %q\nwant %q", server, got[server], want)
		}
	}
}

// A call that times out is cancelled at the server too. The SDK tells the
// server (notifications/cancelled) off the caller's path, a moment after
// Call returned; the test waits for the server's call to end before it
// closes the set, since a Close in that moment drops the notice, and the
// server's slow call, which httptest's Close waits for, then runs its 60 s.
func TestHTTP_CallTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	server := mcpmock.NewServer(mcpmock.Options{})
	var slowCalls atomic.Int32
	slowEnded := make(chan error, 2) // the server-side context of each slow call, as it ended
	server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if r, ok := req.(*sdk.CallToolRequest); !ok || r.Params.Name != "slow" {
				return next(ctx, method, req)
			}
			slowCalls.Add(1)
			defer func() { slowEnded <- ctx.Err() }()
			return next(ctx, method, req)
		}
	})
	streamable, _ := serve(t, server)
	opts := httpOptions(t)
	opts.CallTimeout = 200 * time.Millisecond
	set, failures := mcp.Start(t.Context(), []mcp.Spec{
		{Name: "web", Transport: mcp.TransportHTTP, URL: streamable, Headers: []mcp.KV{{Name: "Authorization", Value: "Bearer secret"}}},
	}, opts)
	defer set.Close()
	if len(failures) > 0 {
		t.Fatal(failures)
	}

	_, err := set.Call(t.Context(), "mcp__web__slow", `{"ms":60000}`)
	want := `MCP server "web" did not answer the call to slow within 200ms`
	if err == nil || err.Error() != want {
		t.Errorf("Call(slow) error = %v, want %s", err, want)
	}
	select {
	case err := <-slowEnded:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the server's slow call ended with %v, want it cancelled", err)
		}
	case <-time.After(10 * time.Second): // a bound on a failure, not a wait
		t.Fatal("the server's slow call was not cancelled")
	}

	ctx, cancel := context.WithCancelCause(t.Context())
	stopped := errors.New("user pressed stop")
	cancel(stopped)
	if _, err := set.Call(ctx, "mcp__web__slow", `{"ms":60000}`); !errors.Is(err, stopped) {
		t.Errorf("Call with a cancelled ctx error = %v, want it to wrap %v", err, stopped)
	}

	_, err = set.Call(t.Context(), "mcp__web__rpcerror", `{}`)
	want = `MCP server "web" answered the call to rpcerror with an error: protocol failure as asked`
	if err == nil || err.Error() != want {
		t.Errorf("Call(rpcerror) error = %v, want %s", err, want)
	}

	// The server still works, and the call made with a cancelled ctx never
	// reached it.
	if res, err := set.Call(t.Context(), "mcp__web__echo", `{"text":"still here"}`); err != nil || res.Text != "still here" {
		t.Errorf("Call(echo) = %+v, %v", res, err)
	}
	if n := slowCalls.Load(); n != 1 {
		t.Fatalf("%d slow calls reached the server, want 1", n)
	}
	if err := set.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if _, err := set.Call(t.Context(), "mcp__web__echo", `{}`); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Call after Close error = %v", err)
	}
}

func TestStart_TooManyServers(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer ts.Close()
	var specs []mcp.Spec
	for i := range mcp.MaxServers + 2 {
		specs = append(specs, mcp.Spec{Name: string(rune('A' + i)), Transport: mcp.TransportHTTP, URL: ts.URL})
	}
	set, failures := mcp.Start(t.Context(), specs, httpOptions(t))
	defer set.Close()
	if len(failures) != len(specs) {
		t.Fatalf("%d failures, want %d", len(failures), len(specs))
	}
	tooMany := 0
	for _, f := range failures {
		if strings.Contains(f.Error(), "at most 32 MCP servers are supported") {
			tooMany++
		} else if !strings.Contains(f.Error(), "403 Forbidden") {
			t.Errorf("unexpected failure: %v", f)
		}
	}
	if tooMany != 2 {
		t.Errorf("%d servers refused as too many, want 2", tooMany)
	}
}

// An unreachable server's URL and headers may carry credentials: neither
// the failure (which the editor shows and the model reads) nor any log line
// quotes them, but they still say which server failed and where.
func TestHTTP_UnreachableServerSecretsRedacted(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	opts := mcp.Options{Logger: zerolog.New(zerolog.SyncWriter(&logs)).Level(zerolog.DebugLevel), StartTimeout: 5 * time.Second}
	auth := []mcp.KV{{Name: "Authorization", Value: "Bearer header-secret-value"}}
	_, failures := mcp.Start(t.Context(), []mcp.Spec{
		{Name: "old", Transport: mcp.TransportSSE, URL: "http://user:pass-secret@127.0.0.1:1/sse?token=secret123", Headers: auth},
		{Name: "web", Transport: mcp.TransportHTTP, URL: "http://user:pass-secret@127.0.0.1:1/mcp?token=secret123", Headers: auth},
	}, opts)
	if len(failures) != 2 {
		t.Fatalf("failures = %v, want two", failures)
	}
	var text strings.Builder
	for _, f := range failures {
		text.WriteString(f.Error() + "\n")
	}
	text.WriteString(logs.String())
	for _, secret := range []string{"secret123", "pass-secret", "user:", "header-secret-value"} {
		if strings.Contains(text.String(), secret) {
			t.Errorf("%q is quoted:\n%s", secret, text.String())
		}
	}
	if want := `MCP server "old" could not be started: Get "http://REDACTED@127.0.0.1:1/sse?token=REDACTED": dial tcp 127.0.0.1:1: connect: connection refused`; failures[0].Error() != want {
		t.Errorf("failure of old:\n got %s\nwant %s", failures[0].Error(), want)
	}
	if !strings.Contains(logs.String(), "http://REDACTED@127.0.0.1:1/mcp?token=REDACTED") {
		t.Errorf("the log does not say where web was looked for:\n%s", logs.String())
	}
}

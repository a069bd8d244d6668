//go:build linux

package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/agent/mcp/mcpmock"
	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// These tests run the test binary itself as an MCP server (see TestMain in
// main_test.go), so real processes start and real time passes. Bounds on
// time separate "returned promptly" from "waited for a timeout", not one
// scheduler from another.
const prompt = 3 * time.Second

// mockSpec is a stdio spec for the mock server with extra environment.
func mockSpec(t *testing.T, name string, env ...string) mcp.Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sp := mcp.Spec{Name: name, Command: exe, Env: []mcp.KV{{Name: mcpmock.EnvServe, Value: "1"}}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		sp.Env = append(sp.Env, mcp.KV{Name: k, Value: v})
	}
	return sp
}

func testOptions(t *testing.T) mcp.Options {
	return mcp.Options{
		Dir:       t.TempDir(),
		StopGrace: 200 * time.Millisecond,
		Logger:    zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
}

// startOne starts one server that must work, and closes it at the end.
func startOne(t *testing.T, sp mcp.Spec, opts mcp.Options) *mcp.Set {
	t.Helper()
	set, failures := mcp.Start(t.Context(), []mcp.Spec{sp}, opts)
	if len(failures) > 0 {
		t.Fatalf("Start() failures: %v", failures)
	}
	t.Cleanup(func() {
		if err := set.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return set
}

func call(t *testing.T, set *mcp.Set, name, args string) mcp.Result {
	t.Helper()
	res, err := set.Call(t.Context(), name, args)
	if err != nil {
		t.Fatalf("Call(%s, %s) error: %v", name, args, err)
	}
	return res
}

func TestStdio_ListAndCall(t *testing.T) {
	t.Parallel()
	set := startOne(t, mockSpec(t, "mock"), testOptions(t))

	var names []string
	for _, d := range set.Tools() {
		names = append(names, d.Name)
		if len(d.Parameters) == 0 || d.Parameters[0] != '{' {
			t.Errorf("tool %s has parameters %s", d.Name, d.Parameters)
		}
	}
	want := "mcp__mock__big mcp__mock__crash mcp__mock__echo mcp__mock__env mcp__mock__fail mcp__mock__mixed mcp__mock__pid mcp__mock__rpcerror mcp__mock__slow mcp__mock__spawn mcp__mock__spawn_detached"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Tools() = %s\nwant %s", got, want)
	}
	if server, tool, ok := set.Lookup("mcp__mock__echo"); server != "mock" || tool != "echo" || !ok {
		t.Errorf("Lookup(mcp__mock__echo) = %q, %q, %v", server, tool, ok)
	}
	if _, _, ok := set.Lookup("read_file"); ok {
		t.Error("Lookup(read_file) found an MCP tool")
	}

	if got := call(t, set, "mcp__mock__echo", `{"text":"hello"}`); got != (mcp.Result{Text: "hello"}) {
		t.Errorf("echo = %+v", got)
	}
	if got := call(t, set, "mcp__mock__fail", `{"message":"no luck"}`); got != (mcp.Result{Text: "no luck", IsError: true}) {
		t.Errorf("fail = %+v", got)
	}
	wantMixed := "some text\n[image: image/png, 4 bytes]\n[resource link: file:///tmp/a.txt a.txt (text/plain)]\n[resource: file:///tmp/b.txt (text/plain)]\nembedded text"
	if got := call(t, set, "mcp__mock__mixed", ``); got.Text != wantMixed {
		t.Errorf("mixed = %q\nwant %q", got.Text, wantMixed)
	}
	big := call(t, set, "mcp__mock__big", `{"bytes":1048576}`).Text
	if len(big) > mcp.MaxResult || !strings.HasPrefix(big, "BEGINxxx") || !strings.HasSuffix(big, "xxxEND") || !strings.Contains(big, "bytes omitted") {
		t.Errorf("big result: %d bytes, head %q, tail %q", len(big), big[:10], big[len(big)-10:])
	}
}

func TestStdio_BadArguments(t *testing.T) {
	t.Parallel()
	set := startOne(t, mockSpec(t, "mock"), testOptions(t))
	for _, args := range []string{`[1]`, `{"text":`, `"hi"`} {
		res := call(t, set, "mcp__mock__echo", args)
		if !res.IsError || !strings.HasPrefix(res.Text, "The arguments must be a JSON object") {
			t.Errorf("Call(echo, %s) = %+v, want an IsError result about the arguments", args, res)
		}
	}
	// The server refusing arguments that do not match the schema is a tool
	// error the model can fix.
	res := call(t, set, "mcp__mock__echo", `{"text":3}`)
	if !res.IsError {
		t.Errorf("Call(echo, text 3) = %+v, want IsError", res)
	}
	if _, err := set.Call(t.Context(), "mcp__mock__nope", `{}`); err == nil || !strings.Contains(err.Error(), `no MCP tool called "mcp__mock__nope"`) {
		t.Errorf("Call(unknown tool) error = %v", err)
	}
}

// Two servers start concurrently; one offers too many tools over several
// pages, the other a tool whose schema is too big.
func TestStdio_Bounds(t *testing.T) {
	t.Parallel()
	specs := []mcp.Spec{
		mockSpec(t, "many", mcpmock.EnvExtraTools+"=140", mcpmock.EnvPageSize+"=50"),
		mockSpec(t, "huge", mcpmock.EnvHugeSchema+"=1"),
	}
	set, failures := mcp.Start(t.Context(), specs, testOptions(t))
	defer set.Close()
	if len(failures) > 0 {
		t.Fatalf("Start() failures: %v", failures)
	}
	count := map[string]int{}
	for _, d := range set.Tools() {
		server, tool, _ := set.Lookup(d.Name)
		count[server]++
		if tool == "huge_schema" {
			t.Errorf("tool with a huge schema offered: %s", d.Name)
		}
	}
	if count["many"] != mcp.MaxToolsPerServer || count["huge"] != 11 {
		t.Errorf("tools per server = %v, want many: %d, huge: 11", count, mcp.MaxToolsPerServer)
	}
	// Sorted by name, the first 128 are big, crash, echo, env and
	// extra_000 to extra_123.
	if _, _, ok := set.Lookup("mcp__many__extra_123"); !ok {
		t.Error("mcp__many__extra_123 is missing")
	}
	if _, _, ok := set.Lookup("mcp__many__extra_124"); ok {
		t.Error("mcp__many__extra_124 is offered beyond the limit")
	}
}

func TestStdio_StartFailures(t *testing.T) {
	t.Parallel()
	specs := []mcp.Spec{
		mockSpec(t, "quitter", mcpmock.EnvExitAtOnce+"=1"),
		{Name: "missing", Command: "/no/such/server"},
		{Name: "", Command: "/bin/true"},
		{Name: "nocommand"},
		{Name: "nourl", Transport: "http"},
		{Name: "badurl", Transport: "sse", URL: "ftp://example.com"},
		{Name: "badheader", Transport: "http", URL: "http://127.0.0.1:1/", Headers: []mcp.KV{{Name: "Bad Name", Value: "v"}}},
		{Name: "badenv", Command: "/bin/true", Env: []mcp.KV{{Name: "A=B", Value: "v"}}},
		{Name: "ws", Transport: "websocket", URL: "ws://x"},
		{Name: "quitter", Command: "/bin/true"},
	}
	set, failures := mcp.Start(t.Context(), specs, testOptions(t))
	defer set.Close()
	if len(set.Tools()) != 0 {
		t.Errorf("Tools() = %v, want none", set.Tools())
	}
	got := map[string]string{}
	for _, f := range failures {
		got[f.Server] += f.Error()
	}
	want := map[string]string{
		"quitter":   `MCP server "quitter" is listed more than once; only the first one is started` + `MCP server "quitter" exited before it answered initialize (exit status 1): mcpmock: exiting at once as asked`,
		"missing":   `MCP server "missing" could not be started: fork/exec /no/such/server: no such file or directory`,
		"":          `MCP server #3 has no name`,
		"nocommand": `MCP server "nocommand" has no command`,
		"nourl":     `MCP server "nourl" has no url`,
		"badurl":    `MCP server "badurl" has an invalid url: it must be an absolute http or https URL`,
		"badheader": `MCP server "badheader" has an invalid header "Bad Name"`,
		"badenv":    `MCP server "badenv" has an invalid environment variable "A=B"`,
		"ws":        `MCP server "ws" has unknown transport "websocket" (want stdio, http or sse)`,
	}
	for server, w := range want {
		if got[server] != w {
			t.Errorf("failure of %q:\n got %s\nwant %s", server, got[server], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("failures for %d servers, want %d: %v", len(got), len(want), got)
	}
}

func TestStdio_StartTimeoutKillsServer(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	opts := testOptions(t)
	// Long enough for the shell to have started and written its pid even
	// on a loaded machine (at 300ms, a load of 17 on two cores killed it
	// before it ran, leaving no pid to check).
	opts.StartTimeout = 2 * time.Second
	// The pid is written by a shell that then becomes the server (exec):
	// the shell starts in a millisecond, while the race-built test binary
	// that serves may take longer than the timeout to start on a loaded
	// machine and so never write it itself.
	sp := mockSpec(t, "silent", mcpmock.EnvSilent+"=1", mcpmock.EnvLinger+"=1", "PIDFILE="+pidFile)
	sp.Args = []string{"-c", `echo $$ > "$PIDFILE"; exec "$0"`, sp.Command}
	sp.Command = "/bin/sh"
	begin := time.Now()
	set, failures := mcp.Start(t.Context(), []mcp.Spec{sp}, opts)
	defer set.Close()
	if took := time.Since(begin); took > opts.StartTimeout+prompt {
		t.Errorf("Start() took %v", took)
	}
	want := `MCP server "silent" did not answer initialize within 2s`
	if len(failures) != 1 || failures[0].Error() != want {
		t.Fatalf("failures = %v, want %s", failures, want)
	}
	// On a machine loaded enough that the shell had not run when the
	// timeout killed its group, there is no pid: a shell that survived
	// would still write it, so wait a while for one before concluding.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return // killed before it ran: nothing left to check
		}
	}
	if pid := testkit.ReadPID(t, pidFile); !testkit.Gone(pid) {
		t.Errorf("server %d is still running after the failed start", pid)
	}
}

// Close gets past a server that ignores the end of stdin and SIGTERM, and
// kills its child too.
func TestStdio_CloseKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	set, failures := mcp.Start(t.Context(), []mcp.Spec{
		mockSpec(t, "stubborn", mcpmock.EnvLinger+"=1", mcpmock.EnvPIDFile+"="+pidFile),
	}, testOptions(t))
	if len(failures) > 0 {
		t.Fatal(failures)
	}
	server := testkit.ReadPID(t, pidFile)
	child, err := strconv.Atoi(call(t, set, "mcp__stubborn__spawn", `{}`).Text)
	if err != nil {
		t.Fatal(err)
	}
	if !!testkit.Gone(server) || !!testkit.Gone(child) {
		t.Fatalf("server alive %v, child alive %v before Close", !testkit.Gone(server), !testkit.Gone(child))
	}

	begin := time.Now()
	if err := set.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if took := time.Since(begin); took > prompt {
		t.Errorf("Close() took %v", took)
	}
	if !testkit.Gone(server) {
		t.Errorf("server %d is alive after Close", server)
	}
	// The child is killed too; its parent died with it, so it is reaped by
	// whoever adopts it, which can take a moment.
	deadline := time.Now().Add(prompt)
	for !testkit.Gone(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !testkit.Gone(child) {
		t.Errorf("child %d is alive after Close", child)
	}
	if err := set.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if _, err := set.Call(t.Context(), "mcp__stubborn__echo", `{"text":"x"}`); err == nil || !strings.Contains(err.Error(), `MCP server "stubborn" is closed`) {
		t.Errorf("Call after Close error = %v", err)
	}
}

// A child the server put in a session of its own, out of reach of signals
// to the server's process group, is killed too: when the server is closed,
// and when it exits by itself.
func TestStdio_DetachedChildDies(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"close", "crash"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			opts := testOptions(t)
			exited := make(chan struct{})
			opts.OnExit = func(string, error) { close(exited) }
			opts.Logger = zerolog.Nop() // the crash is expected
			set, failures := mcp.Start(t.Context(), []mcp.Spec{mockSpec(t, "mock")}, opts)
			if len(failures) > 0 {
				t.Fatal(failures)
			}
			defer set.Close()
			child, err := strconv.Atoi(call(t, set, "mcp__mock__spawn_detached", `{}`).Text)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
			if !!testkit.Gone(child) {
				t.Fatalf("child %d is not running", child)
			}
			if how == "close" {
				if err := set.Close(); err != nil {
					t.Errorf("Close() = %v", err)
				}
			} else {
				_, _ = set.Call(t.Context(), "mcp__mock__crash", `{}`)
				select {
				case <-exited:
				case <-time.After(prompt):
					t.Fatal("OnExit was not called")
				}
			}
			deadline := time.Now().Add(prompt)
			for !testkit.Gone(child) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !testkit.Gone(child) {
				t.Errorf("detached child %d is alive after the server's %s", child, how)
			}
		})
	}
}

// The server's environment is Rebound's without the secrets, plus the
// spec's own variables, which apply even when they name a secret.
func TestStdio_EnvironmentWithoutSecrets(t *testing.T) {
	t.Setenv("MCP_TEST_API_KEY", "sk-mcp-test-secret")
	t.Setenv("MCP_TEST_COPY", "sk-mcp-test-secret")
	t.Setenv("MCP_TEST_KEEP", "kept")
	opts := testOptions(t)
	opts.Secrets = proc.Secrets{Names: []string{"MCP_TEST_API_KEY"}, Values: []string{"sk-mcp-test-secret"}}
	set := startOne(t, mockSpec(t, "mock", "MCP_TEST_GIVEN=given"), opts)
	env := call(t, set, "mcp__mock__env", `{}`).Text
	if strings.Contains(env, "sk-mcp-test-secret") || strings.Contains(env, "MCP_TEST_API_KEY") || strings.Contains(env, "MCP_TEST_COPY") {
		t.Errorf("the server's environment holds the secret:\n%s", env)
	}
	for _, want := range []string{"MCP_TEST_KEEP=kept", "MCP_TEST_GIVEN=given", "PWD=" + opts.Dir} {
		if !slices.Contains(strings.Split(env, "\n"), want) {
			t.Errorf("the server's environment lacks %s:\n%s", want, env)
		}
	}
}

func TestStdio_ServerCrashes(t *testing.T) {
	t.Parallel()
	opts := testOptions(t)
	var mu sync.Mutex
	var exits []string
	exited := make(chan struct{})
	opts.OnExit = func(server string, err error) {
		mu.Lock()
		defer mu.Unlock()
		exits = append(exits, server+": "+err.Error())
		if len(exits) == 1 {
			close(exited)
		}
	}
	set := startOne(t, mockSpec(t, "mock"), opts)

	want := `MCP server "mock" has stopped: exit status 3: mcpmock: crashing as asked`
	_, err := set.Call(t.Context(), "mcp__mock__crash", `{}`)
	if err == nil || err.Error() != want {
		t.Errorf("Call(crash) error = %v\nwant %s", err, want)
	}
	select {
	case <-exited:
	case <-time.After(prompt):
		t.Fatal("OnExit was not called")
	}

	begin := time.Now()
	_, err = set.Call(t.Context(), "mcp__mock__echo", `{"text":"x"}`)
	if err == nil || err.Error() != want {
		t.Errorf("Call(echo) after the crash error = %v\nwant %s", err, want)
	}
	if took := time.Since(begin); took > 100*time.Millisecond {
		t.Errorf("Call after the crash took %v, want it to fail fast", took)
	}
	if err := set.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(exits) != 1 || exits[0] != "mock: "+want {
		t.Errorf("OnExit calls = %q, want one with %q", exits, want)
	}
}

func TestStdio_CloseDuringCall(t *testing.T) {
	t.Parallel()
	set, failures := mcp.Start(t.Context(), []mcp.Spec{mockSpec(t, "mock")}, testOptions(t))
	if len(failures) > 0 {
		t.Fatal(failures)
	}
	errs := make(chan error, 1)
	go func() {
		_, err := set.Call(context.Background(), "mcp__mock__slow", `{"ms":60000}`)
		errs <- err
	}()
	begin := time.Now()
	if err := set.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	select {
	case err := <-errs:
		// Depending on who was first, the call was cut short or never made.
		if err == nil || !strings.Contains(err.Error(), `MCP server "mock"`) || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Call() error = %v, want one saying the server was closed", err)
		}
	case <-time.After(prompt):
		t.Fatal("Call() did not return after Close")
	}
	if took := time.Since(begin); took > prompt {
		t.Errorf("Close() and the call took %v", took)
	}
}

func TestNilSet(t *testing.T) {
	var set *mcp.Set
	if set.Tools() != nil {
		t.Error("nil Set has tools")
	}
	if _, _, ok := set.Lookup("mcp__a__b"); ok {
		t.Error("nil Set looked up a tool")
	}
	if _, err := set.Call(t.Context(), "mcp__a__b", "{}"); err == nil {
		t.Error("nil Set made a call")
	}
	if err := set.Close(); err != nil {
		t.Errorf("nil Set Close() = %v", err)
	}
}

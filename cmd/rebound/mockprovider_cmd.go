package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

func init() {
	register(command{
		name:    "mock-provider",
		summary: "serve the fault-injecting OpenAI-compatible mock provider for tests",
		run:     runMockProvider,
	})
}

const mockProviderUsage = `Usage: rebound mock-provider [--addr 127.0.0.1:0] [--script FILE] [--log FILE] [--allow-remote]

Serves Rebound's fault-injecting OpenAI-compatible mock provider over HTTP, for
other programs' tests. Point an OpenAI client at the base URL it prints:
POST <base URL>/chat/completions answers request by request from the script
(streamed replies, HTTP errors, dropped, stalled or failing streams).

Once listening it prints exactly one line to stdout, the base URL, e.g.
  http://127.0.0.1:41234/v1
and logs to stderr. It runs until SIGINT or SIGTERM, then exits 0.

Without --script every request gets a streamed echo of its last user message
(the script {"fallback": {"echo": true}}). A script's "bucket" puts one rate
limit shared by every client in front of its steps, e.g.
  {"bucket": {"requests": 4, "window": "10s"}, "fallback": {"echo": true}}
allows 4 chat requests per 10 s window and refuses the rest with 429,
retry-after and x-ratelimit-*-requests headers (for testing clients that
share a provider's limit). The script format is described in
docs/mock-provider.md; its JSON Schema is schema/mock-script.schema.json
(also 'rebound schema mock-script').

Exit status: 0 after a signal, 1 if the script or log file is bad or the
address cannot be bound, 2 for a usage error (including a non-loopback --addr
without --allow-remote).

Flags:
`

// defaultMockScript answers every request with an echo, so any client gets
// a reply without writing a script.
var defaultMockScript = mockprovider.Script{Fallback: &mockprovider.Step{Echo: true}}

func runMockProvider(ctx context.Context, args []string, s streams, e env) int {
	f, code, ok := parseMockProviderFlags(args, s.err)
	if !ok {
		return code
	}
	script, scriptName, err := loadMockScript(f.scriptPath, s.in)
	if err != nil {
		fmt.Fprintf(s.err, "rebound mock-provider: %v\n", err)
		return 1
	}

	// The logger and a --log of "-" share stderr; lines must not interleave.
	stderr := &mockProviderLockedWriter{w: s.err}
	log := newLogger(stderr, "info").With().Str("component", "mock-provider").Logger()
	rl := &mockProviderRequestLog{log: log}
	switch f.logPath {
	case "":
	case "-":
		rl.file = stderr
	default:
		file, err := os.Create(f.logPath)
		if err != nil {
			fmt.Fprintf(s.err, "rebound mock-provider: --log: %v\n", err)
			return 1
		}
		defer file.Close()
		rl.file = file
	}

	m := mockprovider.New(script)
	m.SetLog(rl)
	srv, err := mockprovider.Serve(ctx, f.addr, m)
	if err != nil {
		fmt.Fprintf(s.err, "rebound mock-provider: --addr %q: %v\n", f.addr, err)
		return 1
	}
	if !f.loopback {
		log.Warn().Str("addr", srv.Addr).Msg("serving on a non-loopback address (--allow-remote): anyone who can reach it may use the mock")
	}
	log.Info().Str("addr", srv.Addr).Str("baseURL", srv.BaseURL()).Str("script", scriptName).
		Int("steps", len(script.Steps)).Bool("fallback", script.Fallback != nil).Msg("mock provider listening")
	if _, err := fmt.Fprintln(s.out, srv.BaseURL()); err != nil {
		srv.Close()
		fmt.Fprintf(s.err, "rebound mock-provider: writing the base URL to stdout: %v\n", err)
		return 1
	}

	<-ctx.Done()
	if err := srv.Close(); err != nil {
		log.Error().Err(err).Msg("mock provider stopped with an error")
		return 1
	}
	log.Info().Int("requests", m.Count()).Msg("mock provider stopped")
	return 0
}

// mockProviderFlags are mock-provider's flags, checked.
type mockProviderFlags struct {
	addr                string
	loopback            bool // addr's host is a loopback address
	scriptPath, logPath string
}

// parseMockProviderFlags reads mock-provider's flags, reporting a usage
// error to stderr. When not ok, the command ends with code: 0 for --help,
// else 2, also for a non-loopback --addr without --allow-remote.
func parseMockProviderFlags(args []string, stderr io.Writer) (f mockProviderFlags, code int, ok bool) {
	fs := flag.NewFlagSet("rebound mock-provider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mockProviderUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", "127.0.0.1:0", "`host:port` to listen on; port 0 picks a free port. Only loopback hosts (127.0.0.0/8, ::1, localhost) unless --allow-remote")
	fs.StringVar(&f.scriptPath, "script", "", "mock script `FILE` (JSON; - reads stdin). Default: echo every request")
	fs.StringVar(&f.logPath, "log", "", "write one JSON line per request received to `FILE`, truncating it first (- is stderr); credentials are never written")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback --addr: anyone who can reach it may use the mock")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, 0, false
		}
		return f, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rebound mock-provider: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return f, 2, false
	}
	loopback, err := mockLoopbackAddr(f.addr)
	if err != nil {
		fmt.Fprintf(stderr, "rebound mock-provider: --addr %q: %v\n", f.addr, err)
		return f, 2, false
	}
	if !loopback && !*allowRemote {
		fmt.Fprintf(stderr, "rebound mock-provider: --addr %q is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-remote to serve it to the network\n", f.addr)
		return f, 2, false
	}
	f.loopback = loopback
	return f, 0, true
}

// loadMockScript is the script at path ("-": read from in; "": the default
// echo) and the name the log gives it.
func loadMockScript(path string, in io.Reader) (script *mockprovider.Script, name string, err error) {
	switch path {
	case "":
		return &defaultMockScript, "default (echo)", nil
	case "-":
		data, err := io.ReadAll(in)
		if err == nil {
			script, err = mockprovider.ParseScript(data)
		}
		if err != nil {
			return nil, "", fmt.Errorf("stdin: %v", err)
		}
		return script, "stdin", nil
	}
	script, err = mockprovider.LoadScript(path)
	if err != nil {
		return nil, "", err
	}
	return script, path, nil
}

// mockLoopbackAddr reports whether addr's host is a loopback address. A
// missing host (":8080") listens on every interface, so it is not loopback;
// host names other than localhost are not resolved and count as remote.
func mockLoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, errors.New(`want host:port, e.g. "127.0.0.1:0"`)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, nil
	}
	return ip.Unmap().IsLoopback(), nil
}

// mockProviderRequestLog receives each request the mock records as one JSON
// line: it copies the line to the --log file and logs a summary to stderr.
type mockProviderRequestLog struct {
	log    zerolog.Logger
	file   io.Writer
	failed bool // the --log file failed once; reported once
}

// Write is called by the mock under its lock, one line at a time.
func (l *mockProviderRequestLog) Write(p []byte) (int, error) {
	if l.file != nil && !l.failed {
		if _, err := l.file.Write(p); err != nil {
			l.failed = true
			l.log.Error().Err(err).Msg("writing the --log file failed; no more requests will be written to it")
		}
	}
	var s mockprovider.Recorded
	if json.Unmarshal(p, &s) == nil {
		ev := l.log.Info().Int("seq", s.Seq).Str("method", s.Method).Str("path", s.Path).Int("status", s.Status)
		switch {
		case s.Step >= 0:
			ev = ev.Int("step", s.Step)
		case s.Fallback:
			ev = ev.Bool("fallback", true)
		case s.Exhausted:
			ev = ev.Bool("exhausted", true)
		}
		ev.Msg("request")
	}
	return len(p), nil
}

// mockProviderLockedWriter serialises writes to a shared stream.
type mockProviderLockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *mockProviderLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// agentProc is the built binary spawned over real pipes.
type agentProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
}

func spawn(tb testing.TB, ctx context.Context, env ...string) *agentProc {
	tb.Helper()
	cmd := exec.CommandContext(ctx, testkit.ReboundBinary(tb))
	home := tb.TempDir()
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home}, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &agentProc{cmd: cmd, stdin: stdin, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p.lines = bufio.NewScanner(stdout)
	p.lines.Buffer(nil, 32<<20)
	return p
}

func (p *agentProc) send(tb testing.TB, line string) {
	tb.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		tb.Fatalf("write to agent: %v", err)
	}
}

// next reads one stdout line and checks that it is a JSON-RPC 2.0 message:
// stdout must carry the protocol and nothing else.
func (p *agentProc) next(tb testing.TB) map[string]any {
	tb.Helper()
	if !p.lines.Scan() {
		tb.Fatalf("agent closed stdout: %v\nstderr:\n%s", p.lines.Err(), p.stderr)
	}
	var msg map[string]any
	if err := json.Unmarshal(p.lines.Bytes(), &msg); err != nil || msg["jsonrpc"] != "2.0" {
		tb.Fatalf("stdout line is not a JSON-RPC 2.0 message: %q", p.lines.Text())
	}
	return msg
}

// until reads messages up to the response with the given id.
// newSession initializes the agent (no client capabilities) and makes a
// session in cwd, returning its id.
func (p *agentProc) newSession(tb testing.TB, cwd string) string {
	tb.Helper()
	p.send(tb, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	p.until(tb, 0)
	p.send(tb, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"`+cwd+`","mcpServers":[]}}`)
	_, resp := p.until(tb, 1)
	sid, _ := resp["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		tb.Fatalf("session/new answered %v", resp)
	}
	return sid
}

// loadSession initializes the agent and loads session sid, returning the
// updates replayed before the answer.
func (p *agentProc) loadSession(tb testing.TB, sid, cwd string) []map[string]any {
	tb.Helper()
	p.send(tb, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	p.until(tb, 0)
	p.send(tb, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"`+sid+`","cwd":"`+cwd+`","mcpServers":[]}}`)
	notes, resp := p.until(tb, 1)
	if resp["result"] == nil {
		tb.Fatalf("session/load answered %v", resp)
	}
	return notes
}

func (p *agentProc) until(tb testing.TB, id float64) (notes []map[string]any, resp map[string]any) {
	tb.Helper()
	for {
		msg := p.next(tb)
		if msg["id"] == id && msg["method"] == nil {
			return notes, msg
		}
		notes = append(notes, msg)
	}
}

func TestE2E_PromptOverRealPipes(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "Hello from the loopback mock.", Chunks: 3}}})
	srv := httptest.NewServer(mock)
	defer srv.Close()
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait
	defer cancel()

	p := spawn(t, ctx, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-e2e-secret", "REBOUND_STATE_DIR="+state, "REBOUND_MODEL=mock-model")
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	if _, resp := p.until(t, 0); resp["result"].(map[string]any)["protocolVersion"] != 1.0 {
		t.Fatalf("initialize: %v", resp)
	}
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	_, resp := p.until(t, 1)
	sid := resp["result"].(map[string]any)["sessionId"].(string)
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hello"}]}}`)
	notes, resp := p.until(t, 2)
	if got := resp["result"].(map[string]any)["stopReason"]; got != "end_turn" {
		t.Fatalf("stopReason = %v, want end_turn (%v)", got, resp)
	}
	var text strings.Builder
	for _, n := range notes {
		u := n["params"].(map[string]any)["update"].(map[string]any)
		if u["sessionUpdate"] == "agent_message_chunk" {
			text.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	if text.String() != "Hello from the loopback mock." {
		t.Errorf("reply = %q", text.String())
	}
	if mock.Count() != 1 {
		t.Errorf("provider requests = %d, want 1", mock.Count())
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("agent exit: %v\nstderr:\n%s", err, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "sk-e2e-secret") {
		t.Error("the API key appears in stderr")
	}
	logs, _ := filepath.Glob(filepath.Join(state, "sessions", "*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("session logs = %v, want one", logs)
	}
	if fi, err := os.Stat(logs[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("session log mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

func TestE2E_BadConfigReachesTheEditor(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[provider]\nmax_tokens = -5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p := spawn(t, ctx, "REBOUND_CONFIG="+cfg)
	// The editor is answered (it would otherwise see only a dead process),
	// and what follows fails with the text the terminal shows.
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	if _, init := p.until(t, 0); init["result"] == nil {
		t.Fatalf("initialize answered %v", init)
	}
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	_, resp := p.until(t, 1)
	e, _ := resp["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if !strings.Contains(msg, cfg) || !strings.Contains(msg, "provider.max_tokens") {
		t.Errorf("session/new answered %v; want an error naming the file and the key", resp)
	}
	// Its input ends: it exits with status 1 of its own, not killed at
	// the deadline.
	p.stdin.Close()
	err := p.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || ctx.Err() != nil {
		t.Fatalf("rebound with a bad config exited %v (deadline: %v), want exit status 1 when its input ends", err, ctx.Err())
	}
	if s := p.stderr.String(); !strings.Contains(s, cfg) || !strings.Contains(s, "provider.max_tokens") || !strings.Contains(s, msg) {
		t.Errorf("stderr does not name the file and the key as the editor was told (%q):\n%s", msg, s)
	}
}

// minimalProgram is the baseline of the start-up figures: the least a Go
// program that answers one line can do, built here with the same toolchain.
const minimalProgram = `package main

import (
	"bufio"
	"os"
)

func main() {
	if _, err := bufio.NewReader(os.Stdin).ReadBytes('\n'); err != nil {
		os.Exit(1)
	}
	os.Stdout.WriteString("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":1}}\n")
}
`

// buildMinimal builds minimalProgram and returns the binary's path.
func buildMinimal(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for name, text := range map[string]string{"main.go": minimalProgram, "go.mod": "module minimal\n\ngo 1.26\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "minimal")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the minimal program: %v\n%s", err, out)
	}
	return bin
}

// spawnInitialize starts bin, sends initialize, and returns the time until
// the answer's line arrived.
func spawnInitialize(b *testing.B, bin, home string) time.Duration {
	start := time.Now()
	cmd := exec.Command(bin)
	cmd.Env = []string{"HOME=" + home, "REBOUND_STATE_DIR=" + home}
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	took := time.Since(start)
	if err != nil || !strings.Contains(line, `"protocolVersion":1`) {
		b.Fatalf("initialize answer %q: %v", line, err)
	}
	cmd.Wait()
	return took
}

// BenchmarkSpawnInitialize measures what an editor waits for: process start
// to the initialize response, for the built binary and, taking turns with it
// in the same run, for a minimal Go program that answers one line (the
// machine's floor). Reported: the median of each and their ratio (x-minimal), the
// figure that holds across machines. With REBOUND_BENCH_BASELINE set to a
// rebound binary built from another revision, that binary takes its turn in
// the same loop too: x-minimal-baseline is its ratio, and x-baseline is this
// tree's median over the baseline's. The binaries take turns in a shuffled
// order: how fast a process starts depends on which one exited just before
// (a spawn after a Rebound is a few percent faster than one after the
// minimal program), and a fixed order would charge that to one of them.
func BenchmarkSpawnInitialize(b *testing.B) {
	bins := []string{testkit.ReboundBinary(b), buildMinimal(b)}
	if baseline := baselineBinary(); baseline != "" {
		bins = append(bins, baseline)
	}
	home := b.TempDir()
	times := make([][]time.Duration, len(bins))
	order := rand.New(rand.NewPCG(1, 2)) // the same orders in every run
	for b.Loop() {
		for _, j := range order.Perm(len(bins)) {
			times[j] = append(times[j], spawnInitialize(b, bins[j], home))
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	r, f := median(times[0]), median(times[1])
	b.ReportMetric(float64(r.Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(f.Microseconds())/1000, "ms-p50-minimal")
	b.ReportMetric(float64(r)/float64(f), "x-minimal")
	if len(bins) > 2 {
		m := median(times[2])
		b.ReportMetric(float64(m)/float64(f), "x-minimal-baseline")
		b.ReportMetric(float64(r)/float64(m), "x-baseline")
	}
}

// BenchmarkRetryAfterLateness measures, with the built binary against the
// loopback mock, how late the retry after `Retry-After: 1` leaves compared
// with the 1 s the provider asked for (from the 429's arrival at the mock to
// the retry's arrival). Reported as ms-late (mean over iterations).
func BenchmarkRetryAfterLateness(b *testing.B) {
	var late time.Duration
	for b.Loop() {
		mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
			{Status: 429, Headers: map[string]string{"Retry-After": "1"}},
			{Text: "ok"},
		}})
		srv := httptest.NewServer(mock)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p := spawn(b, ctx, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-bench", "REBOUND_STATE_DIR="+b.TempDir())
		sid := p.newSession(b, b.TempDir())
		p.send(b, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi"}]}}`)
		if _, resp := p.until(b, 2); resp["result"] == nil {
			b.Fatalf("session/prompt answered %v", resp)
		}
		p.stdin.Close()
		p.cmd.Wait()
		cancel()
		srv.Close()
		reqs := mock.Requests()
		if len(reqs) != 2 {
			b.Fatalf("provider requests = %d, want 2", len(reqs))
		}
		late += reqs[1].Time.Sub(reqs[0].Time) - time.Second
	}
	b.ReportMetric(float64(late.Microseconds())/1000/float64(b.N), "ms-late")
	// The gap between the refused request and its retry, as a ratio to
	// the second the provider asked for: what the user waits, over what
	// they were told.
	b.ReportMetric(1+late.Seconds()/float64(b.N), "x-asked")
}

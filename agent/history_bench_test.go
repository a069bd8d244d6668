package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
)

// instantProvider answers at once, and notes when the turn's first request
// came: a prompt's cost minus the provider's.
type instantProvider struct {
	first time.Time
	reply []llm.Chunk
	last  llm.Request
}

func (p *instantProvider) Stream(_ context.Context, req llm.Request) (llm.Stream, error) {
	if p.first.IsZero() {
		p.first = time.Now()
	}
	p.last = req
	return &fakeStream{chunks: p.reply}, nil
}

// BenchmarkPromptHistory measures one prompt in a session with a long
// history, against a provider that answers at once (one short reply, no
// tools). The baseline is a prompt in a fresh session (its first turn), a
// median of prompts timed at the start of the same run. Every sub-benchmark
// reports, per prompt:
//
//   - pre-µs: the agent's work before the request (Prompt called → the
//     provider asked), and x-fresh-pre, that as a multiple of the baseline's;
//   - ns/op: the whole Prompt, and x-fresh, that as a multiple of the
//     baseline's.
//
// The sessions: turns=N is a log of N turns (each a tool call, its result
// and a reply, 4 messages for the model) written beforehand and loaded;
// 64MB is a session whose 64 earlier prompts each streamed a 1 MiB reply
// in 1 KiB chunks in this process (65,536 chunk events in memory). Each
// session gets a few prompts (at most a tenth more turns) before the next
// copy takes over, so its length stays about N; making and loading copies
// is not timed.
//
// The logs are on tmpfs when there is one (benchStateDir).
func BenchmarkPromptHistory(b *testing.B) {
	state := benchStateDir(b)
	p := &instantProvider{reply: []llm.Chunk{{Content: "Done: the tests pass."}, {FinishReason: llm.FinishStop}}}
	// One open log at a time: a copy done with is closed, its memory freed.
	a := agent.New(agent.Config{StateDir: state, Model: "m", MaxTokens: 100, Provider: p, Logger: zerolog.Nop(), MaxOpenLogs: 1})
	b.Cleanup(func() { a.Close() })
	ctx := context.Background()
	c := &discardClient{}
	cwd := b.TempDir()
	n := 0
	newID := func() string { n++; return fmt.Sprintf("sess_bench%08d", n) }

	run := func(id string) (pre, total time.Duration) {
		p.first = time.Time{}
		start := time.Now()
		if _, err := a.Prompt(ctx, acp.PromptRequest{SessionID: id, Prompt: prompt("Run the tests again.")}, c); err != nil {
			b.Fatal(err)
		}
		total = time.Since(start)
		return p.first.Sub(start), total
	}
	fresh := func() string {
		r, err := a.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd})
		if err != nil {
			b.Fatal(err)
		}
		return r.SessionID
	}
	// written returns a session loaded from a copy of a log of turns turns.
	written := func(turns int) func() string {
		tmpl := historyLog(cwd, turns)
		return func() string {
			id := newID()
			path := filepath.Join(state, "sessions", id+".jsonl")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(tmpl, "SESSION", id)), 0o600); err != nil {
				b.Fatal(err)
			}
			if _, err := a.LoadSession(ctx, acp.LoadSessionRequest{SessionID: id, Cwd: cwd}, c); err != nil {
				b.Fatal(err)
			}
			return id
		}
	}
	streamed := func() string {
		id := fresh()
		short := p.reply
		p.reply = megabyteReply()
		for range 64 {
			run(id)
		}
		p.reply = short
		return id
	}

	var pres, totals []time.Duration
	for range 31 {
		pre, total := run(fresh())
		pres, totals = append(pres, pre), append(totals, total)
	}
	basePre, baseTotal := median(pres), median(totals)

	for _, bb := range []struct {
		name  string
		make  func() string
		every int // prompts per copy
	}{
		{"fresh", fresh, 1},
		{"turns=10", written(10), 1},
		{"turns=100", written(100), 10},
		{"turns=1000", written(1000), 100},
		{"64MB", streamed, 50},
	} {
		b.Run(bb.name, func(b *testing.B) {
			var pre time.Duration
			id := ""
			i := 0
			for b.Loop() {
				if i%bb.every == 0 {
					b.StopTimer()
					id = bb.make()
					b.StartTimer()
				}
				i++
				d, _ := run(id)
				pre += d
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(float64(pre.Microseconds())/float64(b.N), "pre-µs")
			b.ReportMetric(float64(pre.Nanoseconds())/float64(b.N)/float64(basePre.Nanoseconds()), "x-fresh-pre")
			b.ReportMetric(perOp/float64(baseTotal.Nanoseconds()), "x-fresh")
		})
	}
}

// BenchmarkRequestEncode measures what the go-openai adapter does with
// each request before it is sent: map it to go-openai's types and encode
// the body (llm/body.go: go-openai writes it without the messages, whose
// encodings the adapter keeps from request to request; each request here
// adds one; first-ms is the first, which encodes them all). The requests
// are the last ones of sessions like BenchmarkPromptHistory's;
// body-MB is the body's size, x-prompt the time as a multiple of the
// agent's own work before that request (its pre-µs, a median of 5
// prompts in the same session, measured just before).
func BenchmarkRequestEncode(b *testing.B) {
	p := &instantProvider{reply: []llm.Chunk{{Content: "Done: the tests pass."}, {FinishReason: llm.FinishStop}}}
	state := benchStateDir(b)
	a := agent.New(agent.Config{StateDir: state, Model: "m", MaxTokens: 100, Provider: p, Logger: zerolog.Nop(), MaxOpenLogs: 1})
	b.Cleanup(func() { a.Close() })
	ctx := context.Background()
	c := &discardClient{}
	cwd := b.TempDir()
	n := 0
	written := func(turns int) string {
		n++
		id := fmt.Sprintf("sess_enc%08d", n)
		path := filepath.Join(state, "sessions", id+".jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(historyLog(cwd, turns), "SESSION", id)), 0o600); err != nil {
			b.Fatal(err)
		}
		if _, err := a.LoadSession(ctx, acp.LoadSessionRequest{SessionID: id, Cwd: cwd}, c); err != nil {
			b.Fatal(err)
		}
		return id
	}
	run := func(id string) time.Duration {
		p.first = time.Time{}
		start := time.Now()
		if _, err := a.Prompt(ctx, acp.PromptRequest{SessionID: id, Prompt: prompt("Run the tests again.")}, c); err != nil {
			b.Fatal(err)
		}
		return p.first.Sub(start)
	}
	streamed := func() string {
		r, err := a.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd})
		if err != nil {
			b.Fatal(err)
		}
		short := p.reply
		p.reply = megabyteReply()
		for range 64 {
			run(r.SessionID)
		}
		p.reply = short
		return r.SessionID
	}
	for _, bb := range []struct {
		name string
		make func() string
	}{
		{"turns=0", func() string { return written(0) }},
		{"turns=10", func() string { return written(10) }},
		{"turns=100", func() string { return written(100) }},
		{"turns=1000", func() string { return written(1000) }},
		{"64MB", streamed},
	} {
		b.Run(bb.name, func(b *testing.B) {
			id := bb.make()
			var pres []time.Duration
			for range 5 {
				pres = append(pres, run(id))
			}
			pre, req := median(pres), p.last
			// An adapter of its own: nothing encoded before.
			enc := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://encode.invalid/v1", APIKey: "sk-bench", HTTPClient: drainDoer{}})
			n := len(req.Messages)
			req.Messages = append(slices.Clip(req.Messages), llm.Message{})
			send := func(i int) {
				// Each request adds a message, as a step's tool result does
				// (the adapter keeps encodings: the same request again would
				// encode nothing).
				req.Messages[n] = llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("step %d", i)}
				if _, err := enc.Stream(ctx, req); !errors.Is(err, errDrained) {
					b.Fatal(err)
				}
			}
			// The first request after a load encodes every message.
			start := time.Now()
			send(0)
			cold := time.Since(start)
			i := 0
			for b.Loop() {
				i++
				send(i)
			}
			b.ReportMetric(float64(cold.Microseconds())/1e3, "first-ms")
			b.ReportMetric(float64(drained.Load())/1e6, "body-MB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pre.Nanoseconds()), "x-prompt")
		})
	}
}

// benchStateDir is a state directory on tmpfs (/dev/shm) when there is
// one: a prompt syncs the log three times, and a disk's fsync would hide
// the CPU the benchmarks measure.
func benchStateDir(b *testing.B) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "rebound-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// megabyteReply is a 1 MiB reply in 1 KiB chunks.
func megabyteReply() []llm.Chunk {
	chunk := strings.Repeat("x", 1023) + "\n"
	var r []llm.Chunk
	for range 1024 {
		r = append(r, llm.Chunk{Content: chunk})
	}
	return append(r, llm.Chunk{FinishReason: llm.FinishStop})
}

var (
	errDrained = errors.New("drained")
	drained    atomic.Int64 // the size of the last body
)

// drainDoer reads a request's body and fails it, as a refused connection
// would: what is left is the adapter's own work.
type drainDoer struct{}

func (drainDoer) Do(r *http.Request) (*http.Response, error) {
	n, _ := io.Copy(io.Discard, r.Body)
	drained.Store(n)
	return nil, errDrained
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// discardClient is an editor that takes every update and offers nothing.
type discardClient struct{ acp.Client }

func (discardClient) Update(context.Context, string, acp.SessionUpdate) error { return nil }
func (discardClient) Capabilities() acp.ClientCapabilities                    { return acp.ClientCapabilities{} }

// historyLog is a session log of turns turns, each a prompt, a reply with
// a tool call, the call and its result, and a last reply; SESSION stands
// for the session's id.
func historyLog(cwd string, turns int) string {
	var b strings.Builder
	seq := 0
	line := func(typ, data string) {
		seq++
		fmt.Fprintf(&b, `{"seq":%d,"v":1,"time":"2026-11-01T09:00:00Z","type":%q,"data":%s}`+"\n", seq, typ, data)
	}
	line("session/start", fmt.Sprintf(`{"sessionId":"SESSION","cwd":%q,"model":"m"}`, cwd))
	reply := strings.Repeat("The retry test waits on a real timer. ", 8)
	for t := 1; t <= turns; t++ {
		line("turn/start", fmt.Sprintf(`{"turn":%d,"prompt":[{"type":"text","text":"Why does test %d time out?"}],"text":"Why does test %d time out?"}`, t, t, t))
		line("step/start", fmt.Sprintf(`{"turn":%d,"step":1,"model":"m"}`, t))
		line("assistant/message", fmt.Sprintf(`{"turn":%d,"step":1,"messageId":"msg_%d_1","text":"Let me look.","finishReason":"tool_calls","toolCalls":[{"id":"call_%d","name":"read_file","arguments":"{\"path\":\"retry_test.go\"}"}]}`, t, t, t))
		line("step/end", fmt.Sprintf(`{"turn":%d,"step":1,"outcome":"ok","streamedChars":12}`, t))
		line("tool/call", fmt.Sprintf(`{"turn":%d,"step":1,"toolCallId":"call_%d","name":"read_file","arguments":"{\"path\":\"retry_test.go\"}","title":"Read retry_test.go","kind":"read"}`, t, t))
		line("tool/result", fmt.Sprintf(`{"turn":%d,"toolCallId":"call_%d","status":"completed","output":%q}`, t, t, strings.Repeat("func TestRetry(t *testing.T) {}\n", 16)))
		line("step/start", fmt.Sprintf(`{"turn":%d,"step":2,"model":"m"}`, t))
		line("assistant/message", fmt.Sprintf(`{"turn":%d,"step":2,"messageId":"msg_%d_2","text":%q,"finishReason":"stop"}`, t, t, reply))
		line("step/end", fmt.Sprintf(`{"turn":%d,"step":2,"outcome":"ok","streamedChars":%d}`, t, len(reply)))
		title := ""
		if t == 1 {
			title = `,"title":"Why does test 1 time out?"`
		}
		line("turn/end", fmt.Sprintf(`{"turn":%d,"stopReason":"end_turn"%s}`, t, title))
	}
	return b.String()
}

package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
)

// BenchmarkLoadSession measures session/load of a long session against
// reading its log once (os.ReadFile of the same file, timed in the same
// run): x-read is load time as a multiple of that. Each load is of a fresh
// copy, so nothing is kept from an earlier load; writing the copy is not
// timed. The editor takes every replayed update and does nothing.
//
//   - turns=1000: BenchmarkPromptHistory's 1000-turn log.
//   - long-replies: eight prompts each streamed a reply of 16,384 chunks of
//     75 bytes (the "eight long replies", a ~25 MB log) in this
//     process, so the log holds what the agent writes.
//   - long-prose: the same with lines, quotes and code in each chunk, so
//     the log's text is escaped every few dozen bytes.
func BenchmarkLoadSession(b *testing.B) {
	state := benchStateDir(b)
	p := &instantProvider{}
	a := agent.New(agent.Config{StateDir: state, Model: "m", MaxTokens: 100, Provider: p, Logger: zerolog.Nop(), MaxOpenLogs: 1})
	b.Cleanup(func() { a.Close() })
	ctx := context.Background()
	c := &discardClient{}
	cwd := b.TempDir()
	dir := filepath.Join(state, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}

	long := func(chunk string) []byte {
		r, err := a.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd})
		if err != nil {
			b.Fatal(err)
		}
		p.reply = nil
		for range 16384 {
			p.reply = append(p.reply, llm.Chunk{Content: chunk})
		}
		p.reply = append(p.reply, llm.Chunk{FinishReason: llm.FinishStop})
		for range 8 {
			if _, err := a.Prompt(ctx, acp.PromptRequest{SessionID: r.SessionID, Prompt: prompt("Explain the retry loop in detail.")}, c); err != nil {
				b.Fatal(err)
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, r.SessionID+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		return []byte(strings.ReplaceAll(string(data), r.SessionID, "SESSION"))
	}

	n := 0
	for _, bb := range []struct {
		name string
		log  func() []byte
	}{
		{"turns=1000", func() []byte { return []byte(historyLog(cwd, 1000)) }},
		{"long-replies", func() []byte { return long(strings.Repeat("word ", 15)) }},
		// Prose as a model writes it: lines, quotes and code, so the
		// log's text has escapes every few dozen bytes.
		{"long-prose", func() []byte { return long("The \"retry\" loop waits.\n  if err != nil && n < 3 {\n") }},
	} {
		tmpl := bb.log()
		// copyOf writes a fresh copy of the log and returns its id and path.
		copyOf := func() (string, string) {
			n++
			id := fmt.Sprintf("sess_load%08d", n)
			path := filepath.Join(dir, id+".jsonl")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(tmpl), "SESSION", id)), 0o600); err != nil {
				b.Fatal(err)
			}
			return id, path
		}
		b.Run(bb.name, func(b *testing.B) {
			var reads []time.Duration
			for range 5 {
				_, path := copyOf()
				start := time.Now()
				if _, err := os.ReadFile(path); err != nil {
					b.Fatal(err)
				}
				reads = append(reads, time.Since(start))
				os.Remove(path)
			}
			read := median(reads)
			for b.Loop() {
				b.StopTimer()
				id, _ := copyOf()
				b.StartTimer()
				if _, err := a.LoadSession(ctx, acp.LoadSessionRequest{SessionID: id, Cwd: cwd}, c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tmpl))/1e6, "log-MB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(read.Nanoseconds()), "x-read")
		})
	}
}

package agent

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// BenchmarkLastFill measures what the nearly-full check costs a session of
// 500 turns, each reporting usage, against the derivation of its history
// that a load does anyway (newHistory and add over every event), timed in
// the same run as the baseline (derive-µs, a median of 21):
//
//   - load: lastFill over every event as a load feeds it (step/ends read
//     from the log's bytes), then get; x-derive is that as a fraction of
//     the whole derivation, which already includes it;
//   - prompt: the check a prompt makes before a request (get, windowOf,
//     shouldCompact) on the kept figure; x-derive likewise.
func BenchmarkLastFill(b *testing.B) {
	dir := b.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() { // prompts sync: keep the disk out
		if dir, err = os.MkdirTemp("/dev/shm", "rebound-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){usedReply("Done: the tests pass.", 500)}}
	a := New(Config{StateDir: dir, Model: "m", MaxTokens: 100, Provider: p, Logger: zerolog.Nop(), ContextWindow: 1000, Overflow: Overflow{KeepRecentMessages: 2, CompactAt: 0.9}})
	b.Cleanup(func() { a.Close() })
	res, err := a.NewSession(context.Background(), acp.NewSessionRequest{Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	id := res.SessionID
	for i := range 500 {
		if _, err := ask(context.Background(), a, id, fmt.Sprintf("Run the tests again (%d).", i)); err != nil {
			b.Fatal(err)
		}
	}
	s, err := a.store.lookup(id)
	if err != nil {
		b.Fatal(err)
	}
	events := s.events
	derive := func() *history {
		h := newHistory()
		for _, ev := range events {
			if err := h.add(ev, nil); err != nil {
				b.Fatal(err)
			}
		}
		return h
	}
	// The baseline: the median of 21 derivations, timed here (a
	// benchmark cannot run another from inside).
	var times []time.Duration
	for range 21 {
		start := time.Now()
		derive()
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	base := float64(times[len(times)/2].Nanoseconds())
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			var f session.UsageFill
			for _, ev := range events {
				f.Add(ev, nil)
			}
			if used, ok := f.Used(); !ok || used != 510 {
				b.Fatalf("get() = %d, %v", used, ok)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-derive")
		b.ReportMetric(base/1e3, "derive-µs")
		b.ReportMetric(float64(len(events)), "events")
	})
	h := derive()
	b.Run("prompt", func(b *testing.B) {
		for b.Loop() {
			used, ok := h.fill.Used()
			if !ok || shouldCompact(used, windowOf("gpt-4o-mini", 0), 0.9) {
				b.Fatal("wrong decision")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-derive")
		b.ReportMetric(base/1e3, "derive-µs")
	})
}

package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/session"
)

// BenchmarkListSessions10k measures session/list over a state directory of
// 10,000 sessions (each log a whole turn with its title). The baseline is
// reading the sessions directory's names alone, measured at the start of
// the same run; every sub-benchmark reports its time per list in ms and as
// a multiple of that baseline (x-readdir):
//
//   - readdir: the baseline itself, as a sub-benchmark;
//   - warm: a list by a Rebound that has listed before (it reads only what
//     was appended to the index since);
//   - cold: the first list of a new Rebound process (it reads the whole
//     index);
//   - rebuild: the first list without an index: every log is read, and the
//     index written;
//   - all-pages: every page of the list (100 of 100), by a Rebound that has
//     listed before, also as a multiple of one full read of the index
//     (x-full-read: a warm session.Index.List of all 10,000) and of the
//     first page (x-first-page, what warm measures), both medians measured
//     at the start of the same run.
func BenchmarkListSessions10k(b *testing.B) {
	const n = 10_000
	state := b.TempDir()
	dir := filepath.Join(state, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("sess_%032x", i)
		at := start.Add(time.Duration(i) * time.Minute)
		ts := func(s int) string { return at.Add(time.Duration(s) * time.Second).Format(time.RFC3339Nano) }
		cwd := fmt.Sprintf("/home/user/project-%d", i%20)
		log := strings.Join([]string{
			fmt.Sprintf(`{"seq":1,"v":1,"time":%q,"type":"session/start","data":{"sessionId":%q,"cwd":%q,"model":"gpt-4o-mini","agentVersion":"dev"}}`, ts(0), id, cwd),
			fmt.Sprintf(`{"seq":2,"v":1,"time":%q,"type":"turn/start","data":{"turn":1,"prompt":[{"type":"text","text":"Why does the retry test time out on CI, session %d?"}],"text":"Why does the retry test time out on CI, session %d?"}}`, ts(1), i, i),
			fmt.Sprintf(`{"seq":3,"v":1,"time":%q,"type":"step/start","data":{"turn":1,"step":1,"model":"gpt-4o-mini"}}`, ts(1)),
			fmt.Sprintf(`{"seq":4,"v":1,"time":%q,"type":"assistant/message","data":{"turn":1,"step":1,"messageId":"msg_%032x","text":"It waits on a real timer; use the fake clock.","finishReason":"stop"}}`, ts(3), i),
			fmt.Sprintf(`{"seq":5,"v":1,"time":%q,"type":"step/end","data":{"turn":1,"step":1,"outcome":"ok"}}`, ts(3)),
			fmt.Sprintf(`{"seq":6,"v":1,"time":%q,"type":"turn/end","data":{"turn":1,"stopReason":"end_turn","title":"Why does the retry test time out on CI, session %d?"}}`, ts(3), i),
		}, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(log), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	// Nobody changed the directory lately (a page after the first then
	// trusts what the first read of it found).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		b.Fatal(err)
	}
	readNames := func() {
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil || len(names) != n {
			b.Fatalf("read %d names: %v", len(names), err)
		}
	}
	var samples []time.Duration
	for range 31 {
		t0 := time.Now()
		readNames()
		samples = append(samples, time.Since(t0))
	}
	slices.Sort(samples)
	base := samples[len(samples)/2]

	newAgent := func() *agent.Agent {
		return agent.New(agent.Config{StateDir: state, Model: "m", Logger: zerolog.Nop()})
	}
	list := func(b *testing.B, a *agent.Agent) {
		resp, err := a.ListSessions(b.Context(), acp.ListSessionsRequest{})
		if err != nil || len(resp.Sessions) != agent.ListPageSize || resp.NextCursor == "" {
			b.Fatalf("ListSessions: %d sessions, next %q, %v", len(resp.Sessions), resp.NextCursor, err)
		}
		if want := fmt.Sprintf("sess_%032x", n-1); resp.Sessions[0].SessionID != want {
			b.Fatalf("newest is %s, want %s", resp.Sessions[0].SessionID, want)
		}
	}
	report := func(b *testing.B) {
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(per)/float64(time.Millisecond), "ms/list")
		b.ReportMetric(float64(per)/float64(base), "x-readdir")
	}
	list(b, newAgent()) // writes the index

	median := func(f func()) time.Duration {
		var samples []time.Duration
		for range 15 {
			t0 := time.Now()
			f()
			samples = append(samples, time.Since(t0))
		}
		slices.Sort(samples)
		return samples[len(samples)/2]
	}
	x := session.NewIndex(state, nil)
	full := median(func() {
		if sums, err := x.List(); err != nil || len(sums) != n {
			b.Fatalf("List: %d sessions, %v", len(sums), err)
		}
	})
	warm := newAgent()
	defer warm.Close()
	first := median(func() { list(b, warm) })
	allPages := func(b *testing.B, a *agent.Agent) {
		var cursor string
		listed := 0
		for pages := 1; ; pages++ {
			resp, err := a.ListSessions(b.Context(), acp.ListSessionsRequest{Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			listed += len(resp.Sessions)
			if cursor = resp.NextCursor; cursor == "" {
				if listed != n || pages != n/agent.ListPageSize {
					b.Fatalf("%d sessions in %d pages, want %d in %d", listed, pages, n, n/agent.ListPageSize)
				}
				return
			}
		}
	}

	b.Run("readdir", func(b *testing.B) {
		for b.Loop() {
			readNames()
		}
		report(b)
	})
	b.Run("warm", func(b *testing.B) {
		a := newAgent()
		defer a.Close()
		list(b, a)
		for b.Loop() {
			list(b, a)
		}
		report(b)
	})
	b.Run("all-pages", func(b *testing.B) {
		for b.Loop() {
			allPages(b, warm)
		}
		report(b)
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(per)/float64(full), "x-full-read")
		b.ReportMetric(float64(per)/float64(first), "x-first-page")
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			a := newAgent()
			list(b, a)
			a.Close()
		}
		report(b)
	})
	b.Run("rebuild", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if err := os.Remove(session.IndexPath(state)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			a := newAgent()
			list(b, a)
			a.Close()
		}
		report(b)
	})
}

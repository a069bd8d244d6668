package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// BenchmarkSharedBucket is issue 33's proof: a provider bucket of 4
// requests per 10 s (the mock's Bucket), 8 prompts sent at once, from 8
// sessions of one Rebound process and from 8 Rebound processes (the built
// binary over real pipes and real HTTP, in real time), with
// provider.share_limits off and on. It reports the requests that reached
// the provider, the 429s, those sent into a window an earlier 429 had
// said was closed, the seconds until the last answer, and the prompts
// answered end_turn. "staggered" is 8 sessions of one process whose
// prompts go 0.5 s apart: after the first refusal, the later ones can know
// the window is closed. "herd" is 12 sessions of one process: 4 prompts
// use up the window, and 1 s later 8 more are held on it until its reset
// (recovery.max_retry_after 30 s, long enough to hold them a second
// window; "herd-10s" with the default 10 s). Run it with
// scripts/bench-bucket, or:
//
//	go test ./cmd/rebound/ -run '^$' -bench SharedBucket -benchtime 1x
func BenchmarkSharedBucket(b *testing.B) {
	for _, shape := range []string{"sessions", "processes", "staggered", "herd", "herd-10s"} {
		for _, share := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/share_limits=%v", shape, share), func(b *testing.B) {
				var r bucketRun
				for b.Loop() {
					r = runBucket(b, shape, share)
				}
				b.ReportMetric(float64(r.requests), "requests")
				b.ReportMetric(float64(r.refused), "429s")
				b.ReportMetric(float64(r.intoClosed), "into-closed")
				b.ReportMetric(r.last.Seconds(), "s-to-last")
				b.ReportMetric(float64(r.answered), "answered")
				b.Logf("| %s | %v | %d | %d | %d | %.1f s | %d/%d | %s |", shape, share, r.requests, r.refused, r.intoClosed, r.last.Seconds(), r.answered, r.prompts, r.shared)
			})
		}
	}
}

// bucketRun is what one run measured.
type bucketRun struct {
	requests, refused, intoClosed, answered, prompts int
	last                                             time.Duration
	shared                                           string // what the bucket files said at the end
}

// arrival is one request as the provider saw it.
type arrival struct {
	at          time.Time
	status      int
	closedUntil time.Time // a 429's end of the window
}

func runBucket(b *testing.B, shape string, share bool) bucketRun {
	prompts := 8
	settings := fmt.Sprintf("[provider]\nshare_limits = %v\n", share)
	switch shape {
	case "herd":
		prompts = 12
		settings += "[recovery]\nmax_retry_after = \"30s\"\n"
	case "herd-10s":
		prompts = 12
	}
	mock := mockprovider.New(&mockprovider.Script{Bucket: &mockprovider.Bucket{Requests: 4, Window: "10s"}, Fallback: &mockprovider.Step{Text: "Answered."}})
	var mu sync.Mutex
	var seen []arrival
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		at := time.Now()
		mock.ServeHTTP(rec, r)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			return
		}
		a := arrival{at: at, status: rec.status}
		if ms, err := strconv.ParseInt(rec.Header().Get("Retry-After-Ms"), 10, 64); err == nil && rec.status == http.StatusTooManyRequests {
			a.closedUntil = at.Add(time.Duration(ms) * time.Millisecond)
		}
		mu.Lock()
		seen = append(seen, a)
		mu.Unlock()
	}))
	defer srv.Close()

	dir := b.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(settings), 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"REBOUND_STATE_DIR=" + state, "REBOUND_CONFIG=" + cfg, "OPENAI_BASE_URL=" + srv.URL + "/v1",
		"OPENAI_API_KEY=sk-bench-key-0123456789", "REBOUND_MODEL=mock-model", "REBOUND_LOG_LEVEL=warn"}
	ctx, cancel := context.WithTimeout(b.Context(), 3*time.Minute)
	defer cancel()

	nproc, per := 1, prompts
	if shape == "processes" {
		nproc, per = prompts, 1
	}
	type session struct {
		p  *agentProc
		id string
	}
	var sessions []session
	var procs []*agentProc
	for range nproc {
		p := spawn(b, ctx, env...)
		procs = append(procs, p)
		p.send(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
		p.until(b, 0)
		for i := range per {
			p.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, 1+i, dir))
			_, resp := p.until(b, float64(1+i))
			sid, _ := resp["result"].(map[string]any)["sessionId"].(string)
			sessions = append(sessions, session{p, sid})
		}
	}
	start := time.Now()
	for i, s := range sessions {
		switch {
		case shape == "staggered" && i > 0:
			time.Sleep(500 * time.Millisecond) // real time: the provider is real HTTP
		case strings.HasPrefix(shape, "herd") && i == 4:
			time.Sleep(time.Second) // the first 4 have used up the window
		}
		s.p.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"prompt %d"}]}}`, 100+i, s.id, i))
	}
	r := bucketRun{prompts: prompts}
	for _, p := range procs {
		for pending := per; pending > 0; {
			msg := p.next(b)
			id, ok := msg["id"].(float64)
			if !ok || id < 100 || msg["method"] != nil {
				continue
			}
			pending--
			r.last = max(r.last, time.Since(start))
			if res, _ := msg["result"].(map[string]any); res != nil && res["stopReason"] == "end_turn" {
				r.answered++
			}
		}
		p.stdin.Close()
		p.cmd.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	// A request is sent into a closed window when it arrives after a 429
	// that closed it had been answered (and learnable: knownAfter later;
	// the 8 sent together in the first burst cannot know) and before the
	// window's end.
	const knownAfter = 50 * time.Millisecond
	for i, a := range seen {
		r.requests++
		if a.status == http.StatusTooManyRequests {
			r.refused++
		}
		for _, e := range seen[:i] {
			if e.status == http.StatusTooManyRequests && a.at.After(e.at.Add(knownAfter)) && a.at.Before(e.closedUntil) {
				r.intoClosed++
				break
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(state, "ratelimit", "*.json"))
	r.shared = "no bucket file"
	if len(files) > 0 {
		data, _ := os.ReadFile(files[0])
		var st map[string]json.RawMessage
		json.Unmarshal(data, &st)
		var facts []string
		for _, k := range []string{"cooldown", "pace"} {
			if st[k] != nil {
				facts = append(facts, k)
			}
		}
		r.shared = "bucket file: " + cmp.Or(strings.Join(facts, ", "), "empty")
	}
	return r
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

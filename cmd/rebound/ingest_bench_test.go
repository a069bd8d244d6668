package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// The ingest benchmarks drive the built binary, as an editor would, against
// the loopback mock streaming a reply whose every chunk carries its number
// ("c00042 "). The mock's writes and the editor's reads are timestamped on
// one clock, so a chunk's latency is the time from the provider writing it
// to the editor reading the update that carries it. CPU is the child
// process's own (user + system), from its rusage.

// ingestRun is one prompt's worth of measurements.
type ingestRun struct {
	latencies []time.Duration // per chunk: provider write → editor read
	tail      time.Duration   // provider's last chunk → editor's last update
	firstText time.Duration   // prompt sent → first message update read
	cpu       time.Duration   // the agent process's user + system time
	switches  int64           // its context switches, voluntary or not: each a thread put to sleep and woken
	maxRSSKiB int64
}

var chunkMarker = regexp.MustCompile(`c(\d{5}) `)

// stampWriter timestamps the first write of every chunk marker the mock
// sends.
type stampWriter struct {
	http.ResponseWriter
	mu   *sync.Mutex
	sent map[int]time.Time
}

func (w stampWriter) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	for _, m := range chunkMarker.FindAllSubmatch(p, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		if _, ok := w.sent[n]; !ok {
			w.sent[n] = now
		}
	}
	w.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

func (w stampWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ingest runs one prompt whose reply is markers numbered markers in chunks
// deltas, delay apart (0: as fast as the mock writes), with the agent in the
// given streaming mode.
func ingest(b *testing.B, markers, chunks int, delay time.Duration, streaming string) ingestRun {
	b.Helper()
	return ingestWith(b, testkit.ReboundBinary(b), markers, chunks, delay, streaming)
}

// baselineBinary is a Rebound built from another revision, named by
// REBOUND_BENCH_BASELINE, to measure against in the same run (see
// BENCHMARKS.md); "" when unset.
func baselineBinary() string { return os.Getenv("REBOUND_BENCH_BASELINE") }

func ingestWith(b *testing.B, bin string, markers, chunks int, delay time.Duration, streaming string) ingestRun {
	b.Helper()
	var text strings.Builder
	for i := range markers {
		fmt.Fprintf(&text, "c%05d ", i)
	}
	step := mockprovider.Step{Text: text.String(), Chunks: chunks}
	if delay > 0 {
		step.ChunkDelay = delay.String()
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{step}})
	var mu sync.Mutex
	sent := map[int]time.Time{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mock.ServeHTTP(stampWriter{ResponseWriter: w, mu: &mu, sent: sent}, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cmd := exec.CommandContext(ctx, bin)
	home := b.TempDir()
	cmd.Env = []string{"HOME=" + home, "REBOUND_STATE_DIR=" + home, "OPENAI_BASE_URL=" + srv.URL + "/v1",
		"OPENAI_API_KEY=sk-bench", "REBOUND_STREAMING=" + streaming, "REBOUND_LOG_LEVEL=warn"}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReaderSize(stdout, 1<<20)
	send := func(s string) { io.WriteString(stdin, s+"\n") }
	var sid string
	got := map[int]time.Time{}
	var last, first time.Time
	var carry string
	read := func(id float64) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				b.Fatalf("agent stdout: %v", err)
			}
			now := time.Now()
			var msg struct {
				ID     *float64 `json:"id"`
				Result struct {
					SessionID string `json:"sessionId"`
				} `json:"result"`
				Params struct {
					Update struct {
						Kind    string `json:"sessionUpdate"`
						Content struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				} `json:"params"`
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				b.Fatalf("agent wrote %q: %v", line, err)
			}
			if msg.ID != nil && *msg.ID == id {
				if msg.Result.SessionID != "" {
					sid = msg.Result.SessionID
				}
				return
			}
			if msg.Params.Update.Kind == "agent_message_chunk" {
				last = now
				if first.IsZero() {
					first = now
				}
				// Held pieces may cut a marker: scan with the end of the
				// previous update in front.
				text := carry + msg.Params.Update.Content.Text
				for _, m := range chunkMarker.FindAllStringSubmatch(text, -1) {
					n, _ := strconv.Atoi(m[1])
					if _, ok := got[n]; !ok {
						got[n] = now
					}
				}
				carry = text[max(0, len(text)-7):]
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	read(0)
	send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	read(1)
	prompted := time.Now()
	send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"go"}]}}`)
	read(2)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("agent exit: %v", err)
	}
	var run ingestRun
	mu.Lock()
	defer mu.Unlock()
	if len(got) != markers || len(sent) != markers {
		b.Fatalf("%d chunks sent, %d received, want %d", len(sent), len(got), markers)
	}
	var lastSent time.Time
	for n, at := range sent {
		run.latencies = append(run.latencies, got[n].Sub(at))
		if at.After(lastSent) {
			lastSent = at
		}
	}
	run.tail = last.Sub(lastSent)
	run.firstText = first.Sub(prompted)
	run.cpu, run.switches, run.maxRSSKiB = childUsage(cmd.ProcessState)
	return run
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkIngest_LiveLatency: 200 chunks 20 ms apart, live (the
// measurement in the issue that asked for live mode). Reported: the provider
// chunk → editor update latency, p50 and p99, and the prompt → first text.
func BenchmarkIngest_LiveLatency(b *testing.B) {
	var all []time.Duration
	var first time.Duration
	for b.Loop() {
		run := ingest(b, 200, 200, 20*time.Millisecond, "live")
		all = append(all, run.latencies...)
		first += run.firstText
	}
	b.ReportMetric(ms(percentile(all, 0.50)), "ms-p50")
	b.ReportMetric(ms(percentile(all, 0.99)), "ms-p99")
	b.ReportMetric(ms(first/time.Duration(b.N)), "ms-first-text")
}

// BenchmarkIngest_Baseline measures the REBOUND_BENCH_BASELINE binary the
// same ways (it knows no streaming setting; the revision before live mode
// held every reply): first-update latency is then the whole reply's, and
// CPU per 1,000 chunks is the figure to compare with.
func BenchmarkIngest_Baseline(b *testing.B) {
	bin := baselineBinary()
	if bin == "" {
		b.Skip("set REBOUND_BENCH_BASELINE to a rebound binary built from the revision to compare with")
	}
	var big, small, tail, first time.Duration
	for b.Loop() {
		big += ingestWith(b, bin, 16384, 16384, 0, "").cpu
		small += ingestWith(b, bin, 1, 1, 0, "").cpu
		tail += ingestWith(b, bin, 2000, 2000, 250*time.Microsecond, "").tail
		first += ingestWith(b, bin, 200, 200, 20*time.Millisecond, "").firstText
	}
	b.ReportMetric(ms((big-small)/time.Duration(b.N)*1000/16383), "ms-cpu/1k-chunks")
	b.ReportMetric(ms(tail/time.Duration(b.N)), "ms-tail-2k-chunks")
	b.ReportMetric(ms(first/time.Duration(b.N)), "ms-first-text")
}

// BenchmarkIngest_CPU: the agent's CPU per 1,000 chunks, live and held,
// from a 16,384-chunk reply streamed as fast as the mock writes, less a
// 1-chunk reply measured in the same run (start-up, the session, exit).
func BenchmarkIngest_CPU(b *testing.B) {
	for _, mode := range []string{"live", "held"} {
		b.Run(mode, func(b *testing.B) {
			var big, small time.Duration
			for b.Loop() {
				big += ingest(b, 16384, 16384, 0, mode).cpu
				small += ingest(b, 1, 1, 0, mode).cpu
			}
			per1k := (big - small) / time.Duration(b.N) * 1000 / 16383
			b.ReportMetric(ms(per1k), "ms-cpu/1k-chunks")
		})
	}
}

// BenchmarkIngest_HeldTail: held mode, 16,384 chunks 250 µs apart (4,000 a
// second, faster than any provider streams): the provider's last chunk →
// the editor's last update; and the agent's peak memory for the same text in
// 16,384 chunks and in 1,024, to show memory follows the text, not the chunk
// count.
func BenchmarkIngest_HeldTail(b *testing.B) {
	var tail, tail2k time.Duration
	var rssMany, rssFew int64
	for b.Loop() {
		run := ingest(b, 16384, 16384, 250*time.Microsecond, "held")
		tail += run.tail
		tail2k += ingest(b, 2000, 2000, 250*time.Microsecond, "held").tail
		rssMany = max(rssMany, run.maxRSSKiB)
		// The same text in 16× fewer, 16× longer chunks.
		rssFew = max(rssFew, ingest(b, 16384, 1024, 0, "held").maxRSSKiB)
	}
	b.ReportMetric(ms(tail/time.Duration(b.N)), "ms-tail")
	b.ReportMetric(ms(tail2k/time.Duration(b.N)), "ms-tail-2k-chunks")
	b.ReportMetric(float64(rssMany)/1024, "MiB-rss-16k-chunks")
	b.ReportMetric(float64(rssFew)/1024, "MiB-rss-1k-chunks")
}

// BenchmarkIngest_LiveVsBaseline: live mode in this tree and in the
// REBOUND_BENCH_BASELINE binary (a revision that knows live mode),
// alternated in one run: CPU per 1,000 chunks and chunk → update latency,
// each as this tree's figure over the baseline's.
func BenchmarkIngest_LiveVsBaseline(b *testing.B) {
	base := baselineBinary()
	if base == "" {
		b.Skip("set REBOUND_BENCH_BASELINE to a rebound binary with live mode, built from the revision to compare with")
	}
	bins := [2]string{testkit.ReboundBinary(b), base}
	var cpu [2]time.Duration
	var lat [2][]time.Duration
	for b.Loop() {
		for i, bin := range bins {
			cpu[i] += ingestWith(b, bin, 16384, 16384, 0, "live").cpu - ingestWith(b, bin, 1, 1, 0, "live").cpu
			lat[i] = append(lat[i], ingestWith(b, bin, 200, 200, 20*time.Millisecond, "live").latencies...)
		}
	}
	for i, name := range []string{"now", "base"} {
		b.ReportMetric(ms(cpu[i]/time.Duration(b.N)*1000/16383), "ms-cpu/1k-chunks-"+name)
		b.ReportMetric(ms(percentile(lat[i], 0.50)), "ms-p50-"+name)
		b.ReportMetric(ms(percentile(lat[i], 0.99)), "ms-p99-"+name)
	}
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "cpu-ratio")
	b.ReportMetric(float64(percentile(lat[0], 0.50))/float64(percentile(lat[1], 0.50)), "p50-ratio")
	b.ReportMetric(float64(percentile(lat[0], 0.99))/float64(percentile(lat[1], 0.99)), "p99-ratio")
}

// BenchmarkIngest_PacedVsBaseline: the agent's CPU per chunk at a real
// model's pace (issue #21 item 3): 300 chunks 20 ms apart, live, less a
// 1-chunk reply, in this tree and in the REBOUND_BENCH_BASELINE binary,
// alternated in one run; its context switches per chunk (from the same
// rusage: each is a thread going to sleep, to be woken again); and the
// chunk → update latency of the same replies. At this pace each chunk finds
// every thread asleep, so what it costs is mostly waking them, not the work
// a burst measures.
func BenchmarkIngest_PacedVsBaseline(b *testing.B) {
	base := baselineBinary()
	if base == "" {
		b.Skip("set REBOUND_BENCH_BASELINE to a rebound binary with live mode, built from the revision to compare with")
	}
	const chunks = 300
	cpu, switches, lat := pacedRuns(b, [2]string{testkit.ReboundBinary(b), base}, chunks)
	per := float64(b.N * (chunks - 1))
	for i, name := range []string{"now", "base"} {
		b.ReportMetric(float64(cpu[i])/per/1e3, "µs-cpu/chunk-"+name)
		b.ReportMetric(float64(switches[i])/per, "switches/chunk-"+name)
		b.ReportMetric(ms(percentile(lat[i], 0.50)), "ms-p50-"+name)
		b.ReportMetric(ms(percentile(lat[i], 0.99)), "ms-p99-"+name)
	}
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "cpu-ratio")
	b.ReportMetric(float64(switches[0])/float64(switches[1]), "switches-ratio")
	b.ReportMetric(float64(percentile(lat[0], 0.99))/float64(percentile(lat[1], 0.99)), "p99-ratio")
}

// BenchmarkIngest_PacedFloor: Rebound's CPU per chunk at a 20 ms pace as a
// multiple of the least a Go agent can do per chunk (testdata/floor: read
// the SSE chunk with net/http, decode it, append a record, write the
// update), in the same run, alternated: x-floor. What a chunk costs at this
// pace is mostly the runtime waking from idle, which the floor pays too.
func BenchmarkIngest_PacedFloor(b *testing.B) {
	floor := filepath.Join(b.TempDir(), "floor")
	if out, err := exec.Command("go", "build", "-o", floor, "./testdata/floor").CombinedOutput(); err != nil {
		b.Fatalf("go build ./testdata/floor: %v\n%s", err, out)
	}
	const chunks = 300
	cpu, switches, _ := pacedRuns(b, [2]string{testkit.ReboundBinary(b), floor}, chunks)
	per := float64(b.N * (chunks - 1))
	for i, name := range []string{"rebound", "floor"} {
		b.ReportMetric(float64(cpu[i])/per/1e3, "µs-cpu/chunk-"+name)
		b.ReportMetric(float64(switches[i])/per, "switches/chunk-"+name)
	}
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "x-floor")
}

// pacedRuns alternates bins, each streaming chunks 20 ms apart, live, for
// every b.Loop: per binary, the CPU and context switches beyond a 1-chunk
// reply's, and the chunk → update latencies.
func pacedRuns(b *testing.B, bins [2]string, chunks int) (cpu [2]time.Duration, switches [2]int64, lat [2][]time.Duration) {
	for b.Loop() {
		for i, bin := range bins {
			run := ingestWith(b, bin, chunks, chunks, 20*time.Millisecond, "live")
			one := ingestWith(b, bin, 1, 1, 0, "live")
			cpu[i] += run.cpu - one.cpu
			switches[i] += run.switches - one.switches
			lat[i] = append(lat[i], run.latencies...)
		}
	}
	return cpu, switches, lat
}

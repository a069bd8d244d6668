//go:build unix

package llm_test

import (
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// BenchmarkStream_Join reads a reply of 1,024 one-byte deltas through the
// adapter's real SSE path (go-openai and the tap) and reports the cost per
// delta and the chunks a reply came in, for three ways to join deltas:
//
//   - none: every event is a chunk of its own, as before (the baseline);
//   - tap: the stream joins the events already read from the body, which
//     it knows from the tap's count (what Rebound does);
//   - goroutine: a goroutine reads the stream into a channel of 64 chunks;
//     Recv takes one, then whatever else is in the channel, without waiting.
//
// Two paces: burst, the whole body is there at once; slow, each event is
// written only once the chunk before it reached the consumer, so each
// arrives alone (the pace of a model that streams slower than Rebound
// reads). cpu-ns/delta is the CPU of the whole process (every thread, the
// pipe's writer and the GC too), so it counts the goroutine's second core
// that ns/delta hides; compare it only as a ratio.
func BenchmarkStream_Join(b *testing.B) {
	const deltas = 1024
	events := sseEvents(bytesOfDeltas(deltas)...)
	end := sseBody("stop")
	for _, pace := range []string{"burst", "slow"} {
		for _, way := range []string{"none", "tap", "goroutine"} {
			b.Run(pace+"/"+way, func(b *testing.B) {
				b.ReportAllocs()
				chunks := 0
				var elapsed time.Duration
				cpu0 := cpuTime()
				for range b.N {
					var body io.ReadCloser
					got := make(chan struct{}, 1)
					if pace == "burst" {
						body = io.NopCloser(strings.NewReader(events + end))
					} else {
						pr, pw := io.Pipe()
						body = pr
						go func() {
							for ev := range strings.SplitAfterSeq(events, "\n\n") {
								if ev == "" {
									continue
								}
								io.WriteString(pw, ev)
								<-got
							}
							io.WriteString(pw, end)
							pw.Close()
						}()
					}
					p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://bench.invalid/v1", APIKey: testKey, HTTPClient: pipeDoer{body}})
					if way != "tap" {
						llm.NoJoin(p)
					}
					start := time.Now()
					s, err := p.Stream(b.Context(), hello)
					if err != nil {
						b.Fatal(err)
					}
					if way == "goroutine" {
						s = newGoStream(s)
					}
					n := 0
					for {
						c, err := s.Recv()
						if err != nil {
							break
						}
						if c.Content != "" {
							chunks++
							for range len(c.Content) {
								n++
								select {
								case got <- struct{}{}:
								default:
								}
							}
						}
					}
					s.Close()
					elapsed += time.Since(start)
					if n != deltas {
						b.Fatalf("%d bytes of content, want %d", n, deltas)
					}
				}
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*deltas), "ns/delta")
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*deltas), "cpu-ns/delta")
				b.ReportMetric(float64(chunks)/float64(b.N), "chunks/reply")
			})
		}
	}
}

func bytesOfDeltas(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = contentDelta(string(rune('a' + i%18))) // no "s", the start of testKey
	}
	return out
}

// goStream is the alternative to the tap's count: a reader goroutine and a
// bounded channel drained without waiting.
type goStream struct {
	inner   llm.Stream
	ch      chan goResult
	pending *goResult
}

type goResult struct {
	c   llm.Chunk
	err error
}

func newGoStream(s llm.Stream) *goStream {
	g := &goStream{inner: s, ch: make(chan goResult, 64)}
	go func() {
		for {
			c, err := s.Recv()
			g.ch <- goResult{c, err}
			if err != nil {
				return
			}
		}
	}()
	return g
}

func (g *goStream) Recv() (llm.Chunk, error) {
	var r goResult
	if g.pending != nil {
		r, g.pending = *g.pending, nil
	} else {
		r = <-g.ch
	}
	if r.err != nil || r.c.Content == "" {
		return r.c, r.err
	}
	buf := []byte(r.c.Content)
	for len(buf) < 32<<10 && g.pending == nil {
		select {
		case n := <-g.ch:
			if n.err != nil || n.c.Content == "" || n.c.FinishReason != "" {
				g.pending = &n
				continue
			}
			buf = append(buf, n.c.Content...)
		default:
			return llm.Chunk{Content: string(buf)}, nil
		}
	}
	return llm.Chunk{Content: string(buf)}, nil
}

func (g *goStream) Close() error { return g.inner.Close() }

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build unix

package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/rebound-agent/rebound/acp"
)

// objectWriter is the part of jsonrpc2.ObjectStream the benchmarks drive.
type objectWriter interface {
	WriteObject(v any) error
	Close() error
}

// unbatched is LineStream's WriteObject as it was before batching, the
// baseline: marshal, then one Write per line under a mutex.
type unbatched struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (u *unbatched) WriteObject(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	u.mu.Lock()
	defer u.mu.Unlock()
	_, err = u.w.Write(b)
	return err
}

func (u *unbatched) Close() error { return u.w.Close() }

// chunkNotification is a session/update agent_message_chunk of a few
// tokens, exactly as jsonrpc2.Conn.Notify hands it to WriteObject (its
// unexported message type, which marshals itself).
func chunkNotification(b *testing.B) any {
	b.Helper()
	params := acp.SessionNotification{SessionID: "sess_3f9a1c2e7b5d4e60", Update: textUpdate("Hello, wor")}
	return capture(b, func(ctx context.Context, conn *jsonrpc2.Conn) error {
		return conn.Notify(ctx, acp.MethodSessionUpdate, params)
	})[0]
}

// writeCounter counts Writes to w.
type writeCounter struct {
	w      io.Writer
	mu     sync.Mutex
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.w.Write(p)
}

func (c *writeCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// sink is an output for a benchmark: where lines go, and how to close it.
type sink struct {
	w     *writeCounter
	close func() error
}

func (s sink) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s sink) Read([]byte) (int, error)    { return 0, io.EOF }
func (s sink) Close() error                { return s.close() }

// discardSink throws the lines away.
func discardSink(b *testing.B) sink {
	return sink{w: &writeCounter{w: io.Discard}, close: func() error { return nil }}
}

// pipeSink writes to an os.Pipe that a goroutine drains, as an editor reads
// the agent's stdout; Close waits for the drain to end.
func pipeSink(b *testing.B) sink {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(io.Discard, r)
		r.Close()
	}()
	return sink{w: &writeCounter{w: w}, close: sync.OnceValue(func() error {
		err := w.Close()
		<-drained
		return err
	})}
}

var (
	sinks = []struct {
		name string
		new  func(*testing.B) sink
	}{{"discard", discardSink}, {"pipe", pipeSink}}
	streams = []struct {
		name string
		new  func(sink) objectWriter
	}{
		{"batched", func(s sink) objectWriter { return acp.NewLineStream(s, acp.StreamConfig{}) }},
		{"unbatched", func(s sink) objectWriter { return &unbatched{w: s} }},
	}
)

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLineStream_WriteNotification writes one session/update
// agent_message_chunk notification per op from one goroutine (a turn
// streaming a reply), to io.Discard and to an os.Pipe drained by another
// goroutine. The stream is closed inside the timed part, so its last
// Write counts. batched is LineStream; unbatched is the one-Write-per-line
// WriteObject it replaced, the baseline.
//
// Metrics besides ns/op: writes/op, the Writes to the output per
// notification; cpu-ns/op, the CPU time (user and system, all threads, the
// pipe's reader included) per notification.
func BenchmarkLineStream_WriteNotification(b *testing.B) {
	msg := chunkNotification(b)
	for _, sk := range sinks {
		for _, st := range streams {
			b.Run(sk.name+"/"+st.name, func(b *testing.B) {
				out := sk.new(b)
				s := st.new(out)
				b.ReportAllocs()
				cpu0 := cpuTime(b)
				b.ResetTimer()
				for range b.N {
					if err := s.WriteObject(msg); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu := cpuTime(b) - cpu0
				b.ReportMetric(float64(out.w.count())/float64(b.N), "writes/op")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				if err := out.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkLineStream_IdleLatency is the time from WriteObject to the
// reader of an os.Pipe having the line, when the stream is idle (one line
// at a time, as a reply trickles in). p50-µs and p99-µs are over all ops;
// cpu-ns/op counts all threads, the reader's included.
//
// stdio is the batched stream over StdioConn with the pipe's *os.File, as
// Server writes stdout: an idle line is written by WriteObject's caller.
func BenchmarkLineStream_IdleLatency(b *testing.B) {
	msg := chunkNotification(b)
	cases := append(slices.Clone(streams), struct {
		name string
		new  func(sink) objectWriter
	}{"stdio", func(s sink) objectWriter {
		return acp.NewLineStream(acp.StdioConn(strings.NewReader(""), s.w.w.(*os.File)), acp.StreamConfig{})
	}})
	for _, st := range cases {
		b.Run(st.name, func(b *testing.B) {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			got := make(chan struct{})
			go func() {
				defer r.Close()
				br := bufio.NewReader(r)
				for {
					if _, err := br.ReadSlice('\n'); err != nil {
						close(got)
						return
					}
					got <- struct{}{}
				}
			}()
			s := st.new(sink{w: &writeCounter{w: w}, close: w.Close})
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := s.WriteObject(msg); err != nil {
					b.Fatal(err)
				}
				<-got
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			cpu := cpuTime(b) - cpu0
			s.Close()
			w.Close()
			<-got
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

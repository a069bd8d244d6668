package llm_test

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/rebound-agent/rebound/llm"
)

// countingBody is a response body that counts what was read from it.
type countingBody struct {
	r    io.Reader
	read int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *countingBody) Close() error { return nil }

// FuzzStream: arbitrary bytes as a 200 event stream, repeated up to a few
// thousand times to make floods. The adapter does not panic, ends with
// io.EOF (only after a finish reason) or an error, and keeps within its
// caps: never more reply text than MaxReplyBytes, never more than the
// caps' worth of input without a delta, and garbage linear in the input
// (seeds in testdata/fuzz/FuzzStream).
func FuzzStream(f *testing.F) {
	const (
		idle  = 4 << 10
		reply = 16 << 10
		// what the tap and go-openai read ahead of what they parsed
		readAhead = 16<<10 + 4<<10
	)
	f.Fuzz(func(t *testing.T, data []byte, repeat uint16) {
		body := bytes.Repeat(data, 1+int(repeat%2048))
		cb := &countingBody{r: bytes.NewReader(body)}
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://fuzz.invalid/v1", APIKey: testKey,
			HTTPClient: floodDoer{cb}, MaxBytesWithoutProgress: idle, MaxReplyBytes: reply})

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatalf("Stream() = %v: a 200 answer starts a stream", err)
		}
		defer s.Close()
		var (
			text, deltas int
			finished     bool
			atLastDelta  int64 // input read when the last delta arrived
		)
		for i := 0; ; i++ {
			if i > len(body)+2 {
				t.Fatalf("more chunks (%d) than input bytes (%d)", i, len(body))
			}
			c, rerr := s.Recv()
			if rerr != nil {
				err = rerr
				break
			}
			if !c.HasDelta() && c.FinishReason == "" && c.Usage == nil {
				t.Fatalf("Recv() returned an empty chunk %+v", c)
			}
			if c.HasDelta() {
				deltas++
				atLastDelta = cb.read
			}
			text += len(c.Content) + len(c.Reasoning)
			for _, d := range c.ToolCalls {
				text += len(d.ID) + len(d.Name) + len(d.Arguments)
			}
			finished = finished || c.FinishReason != ""
		}
		runtime.ReadMemStats(&after)

		if err == io.EOF && !finished {
			t.Fatalf("io.EOF without a finish reason")
		}
		if _, again := s.Recv(); again != err {
			t.Fatalf("Recv() after the end = %v, want %v again", again, err)
		}
		if text > reply {
			t.Fatalf("%d bytes of reply text passed MaxReplyBytes %d", text, reply)
		}
		if le, ok := errors.AsType[*llm.LimitError](err); ok && !errors.Is(err, llm.ErrMalformedStream) {
			t.Fatalf("a limit error %v does not match ErrMalformedStream", le)
		}
		// After the last delta, at most the idle cap, one event and the
		// read-ahead may be read before the stream ends.
		if since := cb.read - atLastDelta; since > idle+reply+readAhead {
			t.Fatalf("%d bytes read after the last delta (%d deltas), want at most %d", since, deltas, idle+reply+readAhead)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; !raceEnabled && alloc > 1<<20+64*uint64(cb.read) {
			t.Fatalf("allocated %d bytes for %d bytes of input", alloc, cb.read)
		}
	})
}

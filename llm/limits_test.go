package llm_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/llm"
)

// flood is a response body that sends head once, then body over and over,
// up to max bytes in all (then io.EOF, so a test without the fix fails
// instead of hanging). It counts what it sent.
type flood struct {
	head, body string
	max        int64
	sent       int64
	off        int // position within the current copy of body
}

func (f *flood) Read(p []byte) (int, error) {
	if f.sent >= f.max {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.max-f.sent)]
	n := 0
	for n < len(p) {
		if f.sent+int64(n) < int64(len(f.head)) {
			n += copy(p[n:], f.head[f.sent+int64(n):])
			continue
		}
		if f.body == "" {
			break
		}
		c := copy(p[n:], f.body[f.off:])
		n += c
		f.off = (f.off + c) % len(f.body)
	}
	f.sent += int64(n)
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (f *flood) Close() error { return nil }

// floodDoer answers with a 200 event stream whose body is b.
type floodDoer struct{ b io.ReadCloser }

func (d floodDoer) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Request-Id", "req_flood")
	return &http.Response{StatusCode: 200, Header: h, Body: d.b, Request: req}, nil
}

const (
	contentEvent = `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n"
	finishEvent  = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
)

// recvAll reads s to its end, whatever the number of chunks, and returns the
// content received and the final error.
func recvAll(s llm.Stream) (content int, err error) {
	for {
		c, err := s.Recv()
		if err != nil {
			return content, err
		}
		content += len(c.Content) + len(c.Reasoning)
	}
}

// measure runs f, which returns what it keeps alive, and reports the bytes f
// allocated in all and the heap growth still reachable when f returned.
func measure(f func() any) (total, retained uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keep := f()
	runtime.ReadMemStats(&after)
	total = after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	if after.HeapAlloc > before.HeapAlloc {
		retained = after.HeapAlloc - before.HeapAlloc
	}
	return total, retained
}

// attempt runs one attempt to its end and returns the stream, still open,
// and the error it ended with.
func attempt(t *testing.T, p *llm.OpenAI) (llm.Stream, error) {
	t.Helper()
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		return nil, err
	}
	_, err = recvAll(s)
	return s, err
}

// A response that sends no reply text ends after
// DefaultMaxBytesWithoutProgress bytes, whatever it floods with, and holds
// no more than a little of it meanwhile: go-openai used to keep every
// non-data line in a buffer it never empties (about 100 MB/s of keep-alives
// until the first-token timeout).
func TestOpenAI_FloodWithoutProgress(t *testing.T) {
	tests := []struct {
		name, head, body string
		// limit is MaxBytesWithoutProgress, 0 for the default; the
		// others use a smaller one to stay quick under -race.
		limit int64
	}{
		{"keep-alive comments", "", ": keep-alive\n", 0},
		{"keep-alive comments after text", contentEvent, ": keep-alive\n\n", 128 << 10},
		{"event lines", "", "event: ping\n", 128 << 10},
		{"blank lines", "", "\n", 128 << 10},
		{"blank lines with spaces", "", "  \r\n", 128 << 10},
		{"id and retry lines", "", "id: 7\nretry: 1000\n", 128 << 10},
		{"text that is not SSE", "", "<html>maintenance</html>\n", 128 << 10},
		{"one endless comment line", ": ", "x", 128 << 10},
		{"one endless run of spaces", "", " ", 128 << 10},
		{"empty data lines", "", "data:\n\n", 128 << 10},
		{"role-only chunks", "", `data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}` + "\n\n", 128 << 10},
		{"empty content chunks", "", `data: {"choices":[{"index":0,"delta":{"content":""}}]}` + "\n\n", 128 << 10},
		{"usage-only chunks", "", `data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\n", 128 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit, say := tt.limit, fmt.Sprintf("the provider sent %.1f KiB without any reply text", float64(tt.limit)/1024)
			if limit == 0 {
				limit, say = llm.DefaultMaxBytesWithoutProgress, "the provider sent 1.0 MiB without any reply text"
			}
			f := &flood{head: tt.head, body: tt.body, max: 64 << 20}
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://flood.invalid/v1", APIKey: testKey, HTTPClient: floodDoer{f},
				MaxBytesWithoutProgress: tt.limit})
			var err error
			total, retained := measure(func() any {
				var s llm.Stream
				s, err = attempt(t, p)
				return s
			})
			t.Logf("sent %d, allocated %d, retained %d", f.sent, total, retained)
			le, ok := errors.AsType[*llm.LimitError](err)
			if !ok || le.Kind != llm.LimitIdle {
				t.Fatalf("Recv() = %v after %d bytes, want a *LimitError of kind LimitIdle", err, f.sent)
			}
			if !errors.Is(err, llm.ErrMalformedStream) {
				t.Errorf("Recv() = %v, want it to match ErrMalformedStream (PROTOCOL)", err)
			}
			if !strings.Contains(err.Error(), say) {
				t.Errorf("Recv() = %q, want it to say %q", err, say)
			}
			if re, ok := errors.AsType[*llm.RequestIDError](err); !ok || re.RequestID != "req_flood" {
				t.Errorf("Recv() = %v, want the request id kept", err)
			}
			// The tap reads ahead by at most its buffer and go-openai's.
			if f.sent < limit || f.sent > limit+32<<10 {
				t.Errorf("the stream failed after %d bytes, want just past %d", f.sent, limit)
			}
			// Lines that reach the JSON decoder cost garbage per event, so
			// the total is bounded by the limit, not by a constant; what is
			// still held when the attempt fails is the tap's buffers and
			// go-openai's, nothing that grows with the flood.
			if total > uint64(32*limit) && !raceEnabled {
				t.Errorf("the attempt allocated %d bytes in all, want at most %d", total, 32*limit)
			}
			if retained > 256<<10 {
				t.Errorf("the failed attempt holds %d bytes, want at most %d", retained, 256<<10)
			}
		})
	}
}

// A delta resets the count: keep-alives between deltas, however many in
// all, never end a reply as long as each run stays under the limit.
func TestOpenAI_ProgressResetsTheCount(t *testing.T) {
	const limit = 64 << 10
	quiet := strings.Repeat(": keep-alive\n\n", (limit-8<<10)/14)
	var body strings.Builder
	for range 40 { // 40 runs of 56 KiB: 2.2 MiB without progress in all
		body.WriteString(quiet + contentEvent)
	}
	body.WriteString(finishEvent)
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://flood.invalid/v1", APIKey: testKey, MaxBytesWithoutProgress: limit,
		HTTPClient: floodDoer{io.NopCloser(strings.NewReader(body.String()))}})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := recvAll(s)
	if err != io.EOF || n != 80 {
		t.Errorf("recvAll() = %d bytes of content, %v; want 80, io.EOF", n, err)
	}
}

// An endless stream of real text ends at the reply cap: the request deadline
// does not cut a healthy stream, so this is what bounds it.
func TestOpenAI_EndlessReplyEndsAtCap(t *testing.T) {
	text := strings.Repeat("lorem ipsum ", 85) // 1020 bytes per event
	event := fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"content":%q}}]}`+"\n\n", text)
	tests := []struct {
		name  string
		limit int64 // 0: the default
	}{
		{"default cap", 128 << 10},
		{"configured cap", 256 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.limit
			if want == 0 {
				if raceEnabled {
					t.Skip("16 MiB of events take seconds under -race; the configured cap covers the logic")
				}
				want = llm.DefaultMaxReplyBytes
			}
			f := &flood{body: event, max: 4 * want}
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://flood.invalid/v1", APIKey: testKey, MaxReplyBytes: tt.limit, HTTPClient: floodDoer{f}})
			s, err := p.Stream(t.Context(), hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			n, err := recvAll(s)
			le, ok := errors.AsType[*llm.LimitError](err)
			if !ok || le.Kind != llm.LimitReply || le.Limit != want {
				t.Fatalf("Recv() = %v after %d bytes of content, want a *LimitError of kind LimitReply at %d", err, n, want)
			}
			if int64(n) > want || int64(n) < want-int64(len(text)) {
				t.Errorf("content received = %d bytes, want the most that fits in %d", n, want)
			}
			if !errors.Is(err, llm.ErrMalformedStream) {
				t.Errorf("Recv() = %v, want it to match ErrMalformedStream (PROTOCOL)", err)
			}
		})
	}
}

// One SSE line is held whole by go-openai, so its length is capped too; a
// long line that carries text is progress, not bytes without it.
func TestOpenAI_LongEvents(t *testing.T) {
	const limit = 256 << 10
	t.Run("a line that never ends", func(t *testing.T) {
		f := &flood{head: `data: {"choices":[{"index":0,"delta":{"content":"`, body: "x", max: 64 << 20}
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://flood.invalid/v1", APIKey: testKey, MaxReplyBytes: limit, HTTPClient: floodDoer{f}})
		var err error
		total, _ := measure(func() any {
			var s llm.Stream
			s, err = attempt(t, p)
			return s
		})
		if le, ok := errors.AsType[*llm.LimitError](err); !ok || le.Kind != llm.LimitEvent {
			t.Fatalf("Recv() = %v after %d bytes, want a *LimitError of kind LimitEvent", err, f.sent)
		}
		if f.sent > limit+64<<10 {
			t.Errorf("the stream failed after %d bytes, want just past %d", f.sent, limit)
		}
		if total > 8*limit && !raceEnabled {
			t.Errorf("the attempt allocated %d bytes, want at most %d", total, 8*limit)
		}
	})
	t.Run("one event larger than the idle limit", func(t *testing.T) {
		text := strings.Repeat("y", 3<<20)
		body := fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"content":%q}}]}`+"\n\n", text) + finishEvent
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://flood.invalid/v1", APIKey: testKey,
			HTTPClient: floodDoer{io.NopCloser(strings.NewReader(body))}})
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if n, err := recvAll(s); err != io.EOF || n != len(text) {
			t.Errorf("recvAll() = %d bytes, %v; want %d, io.EOF", n, err, len(text))
		}
	})
}

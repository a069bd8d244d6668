package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// oneCharBody is an event stream of n one-character content deltas as
// OpenAI frames them, made as it is read (the whole body would be hundreds
// of megabytes), then the finish and [DONE]. The text is text(i) for delta i.
type oneCharBody struct {
	n, i int
	pend []byte
	done bool
}

func deltaChar(i int) byte { return "abcdefghijklmnopqr tuvwxyz"[i%26] } // no "s": the key's start

func (b *oneCharBody) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		if len(b.pend) == 0 {
			switch {
			case b.i < b.n:
				b.pend = fmt.Appendf(b.pend[:0], `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"%c"},"finish_reason":null}]}`+"\n\n", deltaChar(b.i))
				b.i++
			case !b.done:
				b.pend = append(b.pend[:0], `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n"...)
				b.done = true
			default:
				if w == 0 {
					return 0, io.EOF
				}
				return w, nil
			}
		}
		c := copy(p[w:], b.pend)
		b.pend, w = b.pend[c:], w+c
	}
	return w, nil
}

func (b *oneCharBody) Close() error { return nil }

// oneCharDoer answers every request with a fresh oneCharBody.
type oneCharDoer struct{ n int }

func (d oneCharDoer) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	return &http.Response{StatusCode: 200, Header: h, Body: &oneCharBody{n: d.n}, Request: req}, nil
}

// textClient keeps only the text of the message updates it gets, and their
// number.
type textClient struct {
	acp.Client
	mu      sync.Mutex
	text    strings.Builder
	updates int
}

func (c *textClient) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u.SessionUpdate == acp.UpdateAgentMessageChunk {
		c.text.WriteString(u.Content.Text)
		c.updates++
	}
	return nil
}

func (c *textClient) Capabilities() acp.ClientCapabilities { return acp.ClientCapabilities{} }

// A 128 KiB reply in one-character deltas, through the adapter's real SSE path:
// the deltas that arrive together go out as one record and one update, so
// the log and the memory a session keeps grow with the text, not with the
// number of deltas (one 190-byte record, one 440-byte event and one update
// each before). The editor gets the text as sent.
func TestAgent_OneCharDeltasCostTheirText(t *testing.T) {
	// The ratios checked are those of 2 MiB (1284 bytes allocated per delta
	// there, 1287 here; 4.0× held there, 4.7× here), at a sixteenth of the
	// time: 2 MiB took half of the package's test time.
	n := 128 << 10
	if raceEnabled {
		// Parsing costs 30 times as much under -race (24 s at 64 KiB), which
		// is there for the live path's goroutines, not for sizes: a sixteenth
		// of the text, and the memory bounds (a fixed 80 KB is 5× of 16 KiB)
		// are the run without -race's, as the allocation bound is.
		n = 8 << 10
	}
	want := make([]byte, n)
	for i := range want {
		want[i] = deltaChar(i)
	}
	for _, live := range []bool{true, false} {
		t.Run(map[bool]string{true: "live", false: "held"}[live], func(t *testing.T) {
			dir := t.TempDir()
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://chars.invalid/v1", APIKey: "sk-test-0123456789", HTTPClient: oneCharDoer{n}})
			a := agent.New(agent.Config{StateDir: dir, Model: "m", MaxTokens: 100, Provider: p, Live: live, Logger: zerolog.Nop()})
			defer a.Close()
			c := &textClient{}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			ns, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: ns.SessionID, Prompt: prompt("go")}, c)
			if err != nil || resp.StopReason != acp.StopEndTurn {
				t.Fatalf("Prompt() = %+v, %v", resp, err)
			}
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc) - int64(c.text.Cap())
			runtime.KeepAlive(a)
			fi, err := os.Stat(session.Path(dir, string(ns.SessionID)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d deltas: %d updates, log %d bytes (%.2f× the text), %d bytes held (%.2f×), %d allocated (%.0f per delta)",
				n, c.updates, fi.Size(), float64(fi.Size())/float64(n), held, float64(held)/float64(n), allocated, float64(allocated)/float64(n))
			if c.text.String() != string(want) {
				t.Fatalf("the editor got %d bytes of text, not the %d sent", c.text.Len(), n)
			}
			// The log holds the text twice (the chunks, then the committed
			// message), plus a record per 16 KiB of events read at once.
			if fi.Size() > int64(4*n) {
				t.Errorf("log is %d bytes for %d of text, want under 4×", fi.Size(), n)
			}
			if held > int64(8*n) && !raceEnabled {
				t.Errorf("the session holds %d bytes for %d of text, want under 8×", held, n)
			}
			// Parsing the events costs about 1 KB per delta whatever is done
			// with them (go-openai's line and the JSON decoding); recording
			// and sending each delta on its own cost as much again.
			if per := float64(allocated) / float64(n); per > 1300 && !raceEnabled {
				t.Errorf("%.0f bytes allocated per delta, want at most 1300", per)
			}
			if c.updates > n/50 {
				t.Errorf("%d message updates for %d deltas, want at most %d", c.updates, n, n/50)
			}
		})
	}
}

// A key the provider echoes in its reply, cut into one-byte deltas, reaches
// neither the editor nor the session log, live or held.
func TestAgent_EchoedKeyNotShownOrRecorded(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	for _, live := range []bool{true, false} {
		t.Run(map[bool]string{true: "live", false: "held"}[live], func(t *testing.T) {
			m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
				{Reasoning: "the key is " + key, Text: "Your key: " + key + ". Also sk-live-0123 is not it.", Chunks: 200},
			}})
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: key, HTTPClient: m})
			dir := t.TempDir()
			a := agent.New(agent.Config{StateDir: dir, Model: "m", MaxTokens: 100, Provider: p, Live: live, Logger: zerolog.Nop()})
			defer a.Close()
			c := &recorder{}
			ns, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: ns.SessionID, Prompt: prompt("key?")}, c); err != nil {
				t.Fatal(err)
			}
			var shown, thought strings.Builder
			for _, u := range c.updates {
				switch u.SessionUpdate {
				case acp.UpdateAgentMessageChunk:
					shown.WriteString(u.Content.Text)
				case acp.UpdateAgentThoughtChunk:
					thought.WriteString(u.Content.Text)
				}
			}
			if want := "Your key: [redacted]. Also sk-live-0123 is not it."; shown.String() != want {
				t.Errorf("the editor was shown %q, want %q", shown.String(), want)
			}
			if want := "the key is [redacted]"; thought.String() != want {
				t.Errorf("the editor was shown the thought %q, want %q", thought.String(), want)
			}
			log, err := os.ReadFile(session.Path(dir, string(ns.SessionID)))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(log), "0123456789abcdef") {
				t.Errorf("the session log holds the key:\n%s", log)
			}
		})
	}
}

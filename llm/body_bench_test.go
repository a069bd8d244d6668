package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/rebound-agent/rebound/llm"
)

// BenchmarkRequestBody measures the adapter's work before a request is sent
// (mapping, encoding, the body read by an HTTPDoer that then fails it), per
// request of a session that goes on: each request adds one message to the
// history of the one before, as a step does. Two ways:
//
//   - go-openai: the whole request handed to go-openai, which encodes every
//     message (what the adapter did before it kept encodings);
//   - adapter: the adapter, which encodes the new message and reuses the
//     others' encodings;
//   - adapter-first: a new adapter for each request, so every message is
//     encoded and kept (a session's first request after a load).
//
// turns=N is a history of N turns as BenchmarkPromptHistory's (a prompt, a
// reply with a tool call, its result, a reply: 4 messages a turn) after a
// system prompt and with seven tools offered. The baseline is go-openai's
// request at turns=0, a median of 31 timed at the start of the same run;
// x-base is ns/op as a multiple of it. body-KB is the body's size, cache-KB
// what the adapter's cache holds after the run (its encodings), heap-KB the
// heap it takes (encodings, entries, the map). Each way's first request is
// not timed.
func BenchmarkRequestBody(b *testing.B) {
	tools := make([]llm.ToolDef, 7)
	for i := range tools {
		tools[i] = llm.ToolDef{Name: fmt.Sprintf("tool_%d", i), Description: strings.Repeat("Does a thing. ", 10),
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string","description":"A path in the workspace."}},"required":["path"]}`)}
	}
	history := func(turns int) []llm.Message {
		h := []llm.Message{{Role: llm.RoleSystem, Content: strings.Repeat("You are a coding agent. ", 100)}}
		reply := strings.Repeat("The retry test waits on a real timer. ", 8)
		for t := range turns {
			id := fmt.Sprintf("call_%d", t)
			h = append(h,
				llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Why does test %d time out?", t)},
				llm.Message{Role: llm.RoleAssistant, Content: "Let me look.", ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"retry_test.go"}`}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: strings.Repeat("func TestRetry(t *testing.T) {}\n", 16)},
				llm.Message{Role: llm.RoleAssistant, Content: reply})
		}
		return h
	}
	ways := map[string]func(o *llm.OpenAI, c *openai.Client, req llm.Request) error{
		"go-openai": func(o *llm.OpenAI, c *openai.Client, req llm.Request) error {
			_, err := c.CreateChatCompletionStream(context.Background(), llm.GoOpenAIRequest(o, req))
			return err
		},
		"adapter": func(o *llm.OpenAI, _ *openai.Client, req llm.Request) error {
			_, err := o.Stream(context.Background(), req)
			return err
		},
		"adapter-first": func(_ *llm.OpenAI, c *openai.Client, req llm.Request) error {
			// A new adapter each time: the first request of a session
			// loaded, or compacted, encodes every message.
			o := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.example.test/v1", APIKey: "sk-bench", HTTPClient: discardDoer{}})
			_, err := o.Stream(context.Background(), req)
			return err
		},
	}
	// session returns a function that sends the next request of a session
	// of turns turns, the way given.
	session := func(b *testing.B, way string, turns int) (func(), *llm.OpenAI, *sizeDoer) {
		d := &sizeDoer{}
		o := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.example.test/v1", APIKey: "sk-bench", HTTPClient: d})
		cfg := openai.DefaultConfig("sk-bench")
		cfg.BaseURL, cfg.HTTPClient = "https://api.example.test/v1", d
		c := openai.NewClientWithConfig(cfg)
		req := llm.Request{Model: "m", MaxTokens: 4096, Tools: tools, Messages: history(turns)}
		n := len(req.Messages)
		i := 0
		return func() {
			i++
			// The step's new message; the one before it goes, so the
			// history stays as long.
			req.Messages = append(req.Messages[:n], llm.Message{Role: llm.RoleTool, ToolCallID: fmt.Sprintf("new_%d", i), Content: fmt.Sprintf("output %d", i)})
			if err := ways[way](o, c, req); !errors.Is(err, errSent) {
				b.Fatal(err)
			}
		}, o, d
	}
	next, _, _ := session(b, "go-openai", 0)
	var base []time.Duration
	for range 31 {
		start := time.Now()
		next()
		base = append(base, time.Since(start))
	}
	slices.Sort(base)
	baseline := base[len(base)/2]
	for _, turns := range []int{0, 10, 100, 1000} {
		for _, way := range []string{"go-openai", "adapter", "adapter-first"} {
			b.Run(fmt.Sprintf("turns=%d/%s", turns, way), func(b *testing.B) {
				next, o, d := session(b, way, turns)
				next() // a session loaded: its first request encodes it all
				b.ReportAllocs()
				for b.Loop() {
					next()
				}
				_, cached := llm.BodyCacheSize(o)
				if way == "adapter" {
					// What the cache costs in memory, all told: the heap
					// with it and without it, the history still held.
					var with, without runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&with)
					llm.ResetBodyCache(o)
					runtime.GC()
					runtime.ReadMemStats(&without)
					runtime.KeepAlive(next)
					b.ReportMetric(float64(int64(with.HeapAlloc)-int64(without.HeapAlloc))/1e3, "heap-KB")
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(baseline.Nanoseconds()), "x-base")
				b.ReportMetric(float64(d.size)/1e3, "body-KB")
				b.ReportMetric(float64(cached)/1e3, "cache-KB")
			})
		}
	}
}

// sizeDoer reads a request's body, notes its size and fails it.
type sizeDoer struct{ size int64 }

func (d *sizeDoer) Do(r *http.Request) (*http.Response, error) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		return nil, err
	}
	d.size = n
	return nil, errSent
}

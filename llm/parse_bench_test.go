//go:build unix

package llm_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// parseBody is a reply as a reasoning model with tools streams it: 256
// reasoning deltas, 512 content deltas, a tool call in 256 argument
// fragments, then the finish, usage and [DONE]. 1,024 events carry a
// delta.
func parseBody() (string, int) {
	var d []string
	for i := range 256 {
		d = append(d, reasoningDelta(fmt.Sprintf("r%d ", i%10)))
	}
	for i := range 512 {
		d = append(d, contentDelta(fmt.Sprintf("w%d ", i%10)))
	}
	d = append(d, `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":""}}]}`)
	for i := range 255 {
		d = append(d, `{"tool_calls":[{"index":0,"function":{"arguments":`+jsonString(fmt.Sprintf("a%d", i%10))+`}}]}`)
	}
	body := sseEvents(d...) +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":1024}}\n\n" +
		"data: [DONE]\n\n"
	return body, len(d)
}

// BenchmarkStream_Parse reads parseBody through the whole parser (the tap,
// go-openai's reader, decoding, joining, the scrubber), the body there at
// once, and reports the delta events parsed per second. joined is what
// Rebound does; apart returns every event as a chunk of its own (NoJoin),
// so each event goes through every stage. events/cpu-s divides by the
// process's CPU time instead of the wall clock (cpuTime): on a shared,
// loaded machine it is the steadier of the two.
func BenchmarkStream_Parse(b *testing.B) {
	body, events := parseBody()
	for _, way := range []string{"joined", "apart"} {
		b.Run(way, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var elapsed time.Duration
			cpu0 := cpuTime()
			for range b.N {
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://bench.invalid/v1", APIKey: testKey,
					HTTPClient: pipeDoer{io.NopCloser(strings.NewReader(body))}})
				if way == "apart" {
					llm.NoJoin(p)
				}
				start := time.Now()
				s, err := p.Stream(b.Context(), hello)
				if err != nil {
					b.Fatal(err)
				}
				var r llm.Reply
				for {
					c, err := s.Recv()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := r.Add(c); err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
				elapsed += time.Since(start)
				if len(r.ToolCalls) != 1 || r.Usage == nil || r.FinishReason != llm.FinishToolCalls {
					b.Fatalf("reply %+v", r)
				}
			}
			b.ReportMetric(float64(b.N*events)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(b.N*events)/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
		})
	}
}

package agent_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
)

// modelsDoer answers GET /models after wait (never, if wait is negative)
// with a short list, in memory; nothing else is asked in these benchmarks.
type modelsDoer struct{ wait time.Duration }

func (d modelsDoer) Do(req *http.Request) (*http.Response, error) {
	if d.wait != 0 {
		var after <-chan time.Time
		if d.wait > 0 {
			after = time.After(d.wait)
		}
		select {
		case <-after:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	body := `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"},{"id":"o3-mini","object":"model"}]}`
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// BenchmarkNewSessionModelList measures the first session/new of a
// Rebound process (a new Agent, so nothing is cached) against providers
// whose GET /models answers after 1 s (slow-1s) or never (dead:
// ModelListTimeout), and at once (now). Each reports ms per session/new
// and the multiple of the baseline (x-baseline): the median of 31 with the
// provider that answers at once, timed at the start of the same run. The benchmark uses only what main's tree has too, so the
// same file measures the tree before the model list stopped holding up the
// answer.
func BenchmarkNewSessionModelList(b *testing.B) {
	state := b.TempDir()
	first := func(b *testing.B, wait time.Duration) {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://models.invalid/v1", APIKey: "sk-bench", HTTPClient: modelsDoer{wait}})
		a := agent.New(agent.Config{StateDir: state, Model: "gpt-4o-mini", Provider: p, Logger: zerolog.Nop()})
		defer a.Close()
		if _, err := a.NewSession(b.Context(), acp.NewSessionRequest{Cwd: "/home/user/project"}); err != nil {
			b.Fatal(err)
		}
	}
	var samples []time.Duration
	for range 31 {
		t0 := time.Now()
		first(b, 0)
		samples = append(samples, time.Since(t0))
	}
	slices.Sort(samples)
	base := samples[len(samples)/2]
	for _, bm := range []struct {
		name string
		wait time.Duration
	}{{"now", 0}, {"slow-1s", time.Second}, {"dead", -1}} {
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				first(b, bm.wait)
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(per)/float64(time.Millisecond), "ms/new")
			b.ReportMetric(float64(per)/float64(base), "x-baseline")
		})
	}
}

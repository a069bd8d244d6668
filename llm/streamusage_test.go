package llm_test

import (
	"io"
	"testing"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// Only hosts known to accept stream_options are asked for usage under auto:
// a server that refuses the field would fail every request.
func TestOpenAI_StreamUsage(t *testing.T) {
	tests := []struct {
		baseURL string
		mode    llm.StreamUsage
		want    bool
	}{
		{"https://api.openai.com/v1", llm.StreamUsageAuto, true},
		{"https://API.DeepSeek.com/v1", "", true},
		{"https://openrouter.ai/v1", llm.StreamUsageAuto, true},
		{"https://generativelanguage.googleapis.com/v1", llm.StreamUsageAuto, true},
		{"http://localhost:11434/v1", llm.StreamUsageAuto, true},
		{"http://127.0.0.1:8000/v1", llm.StreamUsageAuto, true},
		{"https://gateway.example/v1", llm.StreamUsageAuto, false},
		// A look-alike is not the provider.
		{"https://api.openai.com.example/v1", llm.StreamUsageAuto, false},
		{"https://gateway.example/v1", llm.StreamUsageOn, true},
		{"https://api.openai.com/v1", llm.StreamUsageOff, false},
	}
	for _, tt := range tests {
		script := &mockprovider.Script{Steps: []mockprovider.Step{{Text: "hi"}}}
		m := mockprovider.New(script)
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: tt.baseURL, APIKey: testKey, HTTPClient: m, StreamUsage: tt.mode})
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatalf("%s: Stream() = %v", tt.baseURL, err)
		}
		_, got, err := drain(t, s)
		s.Close()
		if err != io.EOF {
			t.Fatalf("%s: Recv() final error = %v, want io.EOF", tt.baseURL, err)
		}
		reqs := m.Requests()
		if len(reqs) != 1 || reqs[0].IncludeUsage != tt.want || (got.Usage != nil) != tt.want {
			t.Errorf("%s, %q: include_usage sent %v, usage %v; want %v", tt.baseURL, tt.mode, reqs[0].IncludeUsage, got.Usage, tt.want)
		}
	}
}

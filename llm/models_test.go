package llm_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

func TestOpenAI_ListModels(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Models: []string{"zeta", "alpha", "alpha", "has space", ""}})
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: m})
	got, err := p.ListModels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "zeta"}, got); diff != "" {
		t.Errorf("ListModels (-want +got):\n%s", diff)
	}
	if n := m.ModelListRequests(); n != 1 {
		t.Errorf("model list requests = %d, want 1", n)
	}
	if n := m.Count(); n != 0 {
		t.Errorf("chat requests = %d: listing models is not an attempt", n)
	}
}

func TestOpenAI_ListModelsFails(t *testing.T) {
	t.Run("no list", func(t *testing.T) {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: mockprovider.New(nil)})
		if _, err := p.ListModels(t.Context()); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("ListModels error = %v, want the 404", err)
		}
	})
	t.Run("huge body", func(t *testing.T) {
		body := `{"object":"list","data":[` + strings.Repeat(`{"id":"m","object":"model"},`, 200_000) + `{"id":"last"}]}`
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: jsonDoer(body)})
		if _, err := p.ListModels(t.Context()); !errors.Is(err, llm.ErrBodyTooLarge) {
			t.Errorf("ListModels error = %v, want ErrBodyTooLarge", err)
		}
	})
	t.Run("key in the error", func(t *testing.T) {
		body := `{"error":{"message":"bad key ` + testKey + `","type":"invalid_request_error"}}`
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: statusDoer{401, body}})
		_, err := p.ListModels(t.Context())
		if err == nil || strings.Contains(err.Error(), testKey) {
			t.Errorf("ListModels error = %v, want an error without the key", err)
		}
	})
}

type statusDoer struct {
	status int
	body   string
}

func (d statusDoer) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: d.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(d.body)), Request: req}, nil
}

func jsonDoer(body string) statusDoer { return statusDoer{200, body} }

func TestCleanModelIDs_Bounded(t *testing.T) {
	ids := make([]string, 0, llm.MaxModels+10)
	for i := range llm.MaxModels + 10 {
		ids = append(ids, strings.Repeat("m", 1+i%150)+string(rune('a'+i%26)))
	}
	ids = append(ids, strings.Repeat("x", 201), "tab\tid", "ctl\x01")
	got := llm.CleanModelIDs(ids)
	if len(got) > llm.MaxModels {
		t.Errorf("%d ids kept, want at most %d", len(got), llm.MaxModels)
	}
	for _, id := range got {
		if len(id) > 200 || strings.ContainsAny(id, "\t\x01") {
			t.Errorf("kept %q", id)
		}
	}
}

func TestTakesReasoningEffort(t *testing.T) {
	for model, want := range map[string]bool{"o3-mini": true, "gpt-5": true, "o1": true, "gpt-4o-mini": false, "deepseek-reasoner": false, "llama3": false} {
		if got := llm.TakesReasoningEffort(model); got != want {
			t.Errorf("TakesReasoningEffort(%q) = %v, want %v", model, got, want)
		}
	}
}

func TestOpenAI_SendsReasoningEffort(t *testing.T) {
	for _, effort := range []string{"", "high"} {
		p, m := newMock(t, mockprovider.Step{Text: "ok"})
		req := hello
		req.ReasoningEffort = effort
		s, err := p.Stream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := s.Recv(); err != nil {
				break
			}
		}
		s.Close()
		if got := m.Requests()[0].ReasoningEffort; got != effort {
			t.Errorf("reasoning_effort sent = %q, want %q", got, effort)
		}
	}
}

// The model picker offers chat models only. The ids are the kinds OpenAI's
// GET /v1/models returns (its models documentation lists them): embedding,
// speech, transcription, image, video, moderation, realtime and legacy
// completion models beside the chat ones.
func TestOpenAI_ListModelsKeepsChatModels(t *testing.T) {
	all := []string{"gpt-4o", "gpt-4o-mini", "o3", "gpt-5", "gpt-4o-search-preview", "gpt-4o-audio-preview",
		"text-embedding-3-small", "text-embedding-ada-002", "tts-1", "tts-1-hd", "gpt-4o-mini-tts", "whisper-1",
		"gpt-4o-transcribe", "dall-e-3", "gpt-image-1", "sora-2", "omni-moderation-latest", "text-moderation-latest",
		"gpt-4o-realtime-preview", "davinci-002", "babbage-002", "computer-use-preview", "mistral-embed"}
	m := mockprovider.New(&mockprovider.Script{Models: all})
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: m})
	got, err := p.ListModels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gpt-4o", "gpt-4o-audio-preview", "gpt-4o-mini", "gpt-4o-search-preview", "gpt-5", "o3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListModels (-want +got):\n%s", diff)
	}
}

// Model lists that say each model's context window, in the shapes their
// providers document (recreated, not copied): OpenRouter's /api/v1/models
// (context_length, and top_provider.context_length), Groq's
// (context_window), Mistral's (max_context_length) and vLLM's
// (max_model_len); and values a broken list could send.
const windowsList = `{"object":"list","data":[
 {"id":"openrouter/model-a","context_length":200000,"top_provider":{"context_length":8192}},
 {"id":"openrouter/model-b","top_provider":{"context_length":65536}},
 {"id":"groq-model","object":"model","owned_by":"Groq","active":true,"context_window":131072},
 {"id":"mistral-model","max_context_length":32768},
 {"id":"vllm-model","object":"model","owned_by":"vllm","max_model_len":8192},
 {"id":"no-window"},
 {"id":"negative","context_length":-5},
 {"id":"fraction","context_length":1.5},
 {"id":"huge","context_length":1e30},
 {"id":"too-large","context_window":100000001},
 {"id":"as-string","context_length":"4096"},
 {"id":"text-embedding-3-small","context_length":8191}
]}`

func TestOpenAI_ContextWindowsFromModelList(t *testing.T) {
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: jsonDoer(windowsList)})
	if got := p.ContextWindow("groq-model"); got != 0 {
		t.Errorf("before any list: window %d, want 0", got)
	}
	if _, err := p.ListModels(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{
		"openrouter/model-a": 200000, "openrouter/model-b": 65536, "groq-model": 131072, "mistral-model": 32768, "vllm-model": 8192,
		"no-window": 0, "negative": 0, "fraction": 0, "huge": 0, "too-large": 0, "as-string": 0,
		"text-embedding-3-small": 0, // not offered, so not kept
		"unlisted":               0,
	}
	for id, w := range want {
		if got := p.ContextWindow(id); got != w {
			t.Errorf("ContextWindow(%q) = %d, want %d", id, got, w)
		}
	}
	// A list that is no JSON object the windows can be read from keeps the
	// models and forgets the old windows.
	p2 := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: jsonDoer(`{"data":[{"id":"m","context_length":{"x":1}}]}`)})
	if _, err := p2.ListModels(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := p2.ContextWindow("m"); got != 0 {
		t.Errorf("window of an object value = %d, want 0", got)
	}
}

func TestOpenAI_ContextWindowFromTheMocksList(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Models: []string{"mock-model", "other"}, ContextLengths: map[string]int{"mock-model": 50000}})
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: m})
	if _, err := p.ListModels(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := p.ContextWindow("mock-model"); got != 50000 {
		t.Errorf("mock-model's window = %d, want 50000", got)
	}
	if got := p.ContextWindow("other"); got != 0 {
		t.Errorf("other's window = %d, want 0 (the list names none)", got)
	}
}

package llm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/rebound-agent/rebound/llm"
)

func TestPrefixDialect_FromBaseURLAndSetting(t *testing.T) {
	tests := []struct {
		baseURL string
		mode    llm.Continuation
		want    bool
	}{
		{"https://api.deepseek.com/beta", "", true},
		{"https://api.deepseek.com/beta", llm.ContinueAuto, true},
		{"https://API.DeepSeek.com/beta/", llm.ContinueAuto, true},
		// Prefix completion is a beta feature: the other endpoints refuse it.
		{"https://api.deepseek.com/v1", llm.ContinueAuto, false},
		{"https://api.deepseek.com", llm.ContinueAuto, false},
		{"https://api.mistral.ai/v1", llm.ContinueAuto, true},
		{"https://api.openai.com/v1", llm.ContinueAuto, false},
		{"https://api.anthropic.com/v1/", llm.ContinueAuto, false},
		{"http://localhost:8000/v1", llm.ContinueAuto, false},
		// A proxy in front of DeepSeek is not DeepSeek's host.
		{"https://gateway.example/api.deepseek.com/beta", llm.ContinueAuto, false},
		{"http://localhost:8000/v1", llm.ContinuePrefix, true},
		{"https://api.deepseek.com/beta", llm.ContinuePrompt, false},
		{"https://api.mistral.ai/v1", llm.ContinuePrompt, false},
	}
	for _, tt := range tests {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: tt.baseURL, Continuation: tt.mode, HTTPClient: rawDoer{}})
		if got := llm.ContinuesInPlace(p); got != tt.want {
			t.Errorf("ContinuesInPlace(%s, %q) = %v, want %v", tt.baseURL, tt.mode, got, tt.want)
		}
	}
	if llm.ContinuesInPlace(nil) {
		t.Error("ContinuesInPlace(nil) = true")
	}
}

// bodyDoer records each request's body and answers with a fixed stream.
type bodyDoer struct {
	mu     sync.Mutex
	bodies [][]byte
	paths  []string
	stream string
}

func (d *bodyDoer) Do(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != req.ContentLength {
		return nil, errors.New("the body is not as long as Content-Length says")
	}
	d.mu.Lock()
	d.bodies = append(d.bodies, b)
	d.paths = append(d.paths, req.URL.Path)
	d.mu.Unlock()
	h := http.Header{"Content-Type": {"text/event-stream"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(d.stream)), Request: req}, nil
}

// wireMessages decodes the messages of a request body, each as its fields.
func wireMessages(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var req struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body %s: %v", body, err)
	}
	return req.Messages
}

func continued(prefix string) llm.Request {
	req := hello
	req.Messages = append(append([]llm.Message{}, hello.Messages...), llm.Message{Role: llm.RoleAssistant, Content: prefix, Prefix: true})
	return req
}

const stopStream = `data: {"choices":[{"index":0,"delta":{"content":"rest"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"

// The continued message goes out as the provider documents it, with
// "prefix": true, and the rest of the body is what go-openai wrote: the
// same as without the mark, field for field. Without a mark the body is
// not touched at all.
func TestOpenAI_PrefixOnTheWire(t *testing.T) {
	d := &bodyDoer{stream: stopStream}
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.deepseek.com/beta", HTTPClient: d})
	marked := continued("The quick brown fox ju")
	plain := continued("The quick brown fox ju")
	plain.Messages[len(plain.Messages)-1].Prefix = false
	for _, req := range []llm.Request{marked, plain} {
		s, err := p.Stream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, s); !errors.Is(err, io.EOF) {
			t.Fatalf("Recv() = %v", err)
		}
	}
	if d.paths[0] != "/beta/chat/completions" {
		t.Errorf("path %s, want DeepSeek's beta endpoint", d.paths[0])
	}
	got, want := wireMessages(t, d.bodies[0]), wireMessages(t, d.bodies[1])
	if last := got[len(got)-1]; last["prefix"] != true || last["role"] != "assistant" || last["content"] != "The quick brown fox ju" {
		t.Errorf("continued message on the wire = %v, want the assistant's partial reply with prefix: true", last)
	}
	delete(got[len(got)-1], "prefix")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages besides the mark (-unmarked +marked):\n%s", diff)
	}
	var rest [2]map[string]json.RawMessage
	for i, b := range d.bodies {
		if err := json.Unmarshal(b, &rest[i]); err != nil {
			t.Fatal(err)
		}
		delete(rest[i], "messages")
	}
	if diff := cmp.Diff(rest[1], rest[0]); diff != "" {
		t.Errorf("request fields besides messages (-unmarked +marked):\n%s", diff)
	}
	if bytes.Contains(d.bodies[1], []byte(`"prefix"`)) {
		t.Errorf("a request with nothing to continue carries prefix: %s", d.bodies[1])
	}
}

// A request whose last message is not the assistant's cannot be marked:
// the attempt fails rather than send a continuation the provider would
// answer as a new reply.
func TestOpenAI_PrefixOnANonAssistantMessageFails(t *testing.T) {
	d := &bodyDoer{stream: stopStream}
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.mistral.ai/v1", HTTPClient: d})
	req := continued("x")
	req.Messages[len(req.Messages)-1].Role = llm.RoleUser
	if _, err := p.Stream(t.Context(), req); err == nil || !strings.Contains(err.Error(), "not the assistant's") {
		t.Errorf("Stream() = %v, want it refused", err)
	}
	if len(d.bodies) != 0 {
		t.Errorf("%d requests sent, want none", len(d.bodies))
	}
}

// Every case of testdata/providers/prefix: a continuation in place, as the
// provider's docs describe it, replayed through the adapter. The body
// carries the prefix form, and the reply is only what follows the prefix,
// whether or not the provider repeats it, joined or delta by delta.
func TestOpenAI_PrefixCorpus(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "providers", "prefix", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 3 {
		t.Fatalf("%d cases, want at least 3", len(paths))
	}
	for _, path := range paths {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(ar.Comment), "Source:") {
			t.Fatalf("%s: the comment must start with Source: naming where the bytes come from", path)
		}
		var req struct{ BaseURL, Prefix string }
		var want, body struct{ Text, Finish string }
		var stream string
		for _, f := range ar.Files {
			switch f.Name {
			case "request":
				err = json.Unmarshal(f.Data, &req)
			case "body":
				stream = string(f.Data)
			case "want":
				err = json.Unmarshal(f.Data, &want)
			default:
				t.Fatalf("%s: unknown section %q", path, f.Name)
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", path, f.Name, err)
			}
		}
		for _, join := range []bool{true, false} {
			t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar")+map[bool]string{true: "/joined", false: "/per_delta"}[join], func(t *testing.T) {
				d := &bodyDoer{stream: stream}
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: req.BaseURL, HTTPClient: d})
				if !join {
					llm.NoJoin(p)
				}
				if !llm.ContinuesInPlace(p) {
					t.Fatalf("%s is not continued in place", req.BaseURL)
				}
				s, err := p.Stream(t.Context(), continued(req.Prefix))
				if err != nil {
					t.Fatal(err)
				}
				_, r, err := drain(t, s)
				if !errors.Is(err, io.EOF) {
					t.Fatalf("Recv() = %v", err)
				}
				body.Text, body.Finish = r.Content, r.FinishReason
				if diff := cmp.Diff(want, body); diff != "" {
					t.Errorf("reply (-want +got):\n%s", diff)
				}
				msgs := wireMessages(t, d.bodies[0])
				if last := msgs[len(msgs)-1]; last["prefix"] != true || last["content"] != req.Prefix {
					t.Errorf("last message on the wire = %v, want the prefix with prefix: true", last)
				}
			})
		}
	}
}

// The repeat is dropped only when it is the whole prefix; a reply that
// only starts like the prefix is the reply. Mistral documents its repeat,
// so a whole one is dropped however short; a provider continued in place
// only because the configuration says so may not repeat at all, so only a
// prefix that is certainly repeated (llm.CertainRepeat) is dropped: a short
// one the reply starts with is the reply's own. A reply that stops inside
// the prefix is kept unless certainly a repeat. DeepSeek does not repeat
// the prefix, so its reply is never trimmed.
func TestOpenAI_PrefixEchoOnlyWhole(t *testing.T) {
	event := func(s string) string {
		b, _ := json.Marshal(s)
		return `data: {"choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}` + "\n\n"
	}
	const finish = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	const long = "Hello world, and the rest of a long prefix"
	tests := []struct {
		name, baseURL, prefix string
		deltas                []string
		want                  string
	}{
		{"whole repeat", "https://api.mistral.ai/v1", "Hello world", []string{"Hello", " world", "! And more."}, "! And more."},
		{"whole repeat of a closing brace", "https://api.mistral.ai/v1", "}", []string{"}", "\n}"}, "\n}"},
		{"starts alike", "https://api.mistral.ai/v1", "Hello world", []string{"Hello", " there."}, "Hello there."},
		{"stops inside a short prefix: kept", "https://api.mistral.ai/v1", "Hello world", []string{"Hello wo"}, "Hello wo"},
		{"repeat cut short, certainly", "https://api.mistral.ai/v1", long, []string{long[:30]}, ""},
		{"configured, a long prefix repeated", "http://localhost:8000/v1", long, []string{long, "!"}, "!"},
		{"configured, a short prefix the reply starts with", "http://localhost:8000/v1", "}", []string{"}", "\n}"}, "}\n}"},
		{"configured, a run repeated", "http://localhost:8000/v1", strings.Repeat("=", 40), []string{strings.Repeat("=", 40), "\n"}, strings.Repeat("=", 40) + "\n"},
		{"deepseek keeps it", "https://api.deepseek.com/beta", "Hello world", []string{"Hello world", "!"}, "Hello world!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stream strings.Builder
			for _, d := range tt.deltas {
				stream.WriteString(event(d))
			}
			stream.WriteString(finish)
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: tt.baseURL, Continuation: llm.ContinuePrefix, HTTPClient: &bodyDoer{stream: stream.String()}})
			llm.NoJoin(p)
			s, err := p.Stream(t.Context(), continued(tt.prefix))
			if err != nil {
				t.Fatal(err)
			}
			_, r, err := drain(t, s)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Recv() = %v", err)
			}
			if r.Content != tt.want {
				t.Errorf("reply %q, want %q", r.Content, tt.want)
			}
		})
	}
}

// docs/providers.md says which providers are continued in place.
func TestPrefixDialects_Documented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Continuing a reply")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatal("docs/providers.md has no section Continuing a reply")
	}
	for _, d := range llm.PrefixDialects {
		if !strings.Contains(section, "`"+d.Host) || !strings.Contains(section, d.Path) {
			t.Errorf("docs/providers.md does not say that %s (host %s, path %q) is continued in place", d.Provider, d.Host, d.Path)
		}
	}
	for _, key := range []string{"`auto`", "`prefix`", "`prompt`"} {
		if !strings.Contains(section, key) {
			t.Errorf("docs/providers.md does not explain provider.continuation = %s", key)
		}
	}
}

package agent_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// anyPath serves requests from the mock whatever the base URL's path
// (DeepSeek's is /beta, the mock's /v1).
type anyPath struct{ m *mockprovider.Mock }

func (d anyPath) Do(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.URL.Path = strings.Replace(r.URL.Path, "/beta/", "/v1/", 1)
	return d.m.Do(r)
}

// continuation runs one prompt against script through the real adapter at
// baseURL and returns the request that continued the reply, what the
// editor was shown and what the log committed.
func continuation(t *testing.T, baseURL string, live bool, script []mockprovider.Step, continued int) (req mockprovider.Recorded, shown, committed string) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		m := mockprovider.New(&mockprovider.Script{Steps: script})
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: baseURL, APIKey: "sk-test-0123456789", HTTPClient: anyPath{m}})
		dir := t.TempDir()
		a := agent.New(agent.Config{StateDir: dir, Model: "m", MaxTokens: 100, Provider: p, Live: live, Logger: zerolog.Nop(),
			Recovery:   recovery.Config{Policy: recovery.Policy{MaxRetries: 2, InitialDelay: time.Second, MaxDelay: time.Second, Retryable: recovery.DefaultRetryable}},
			Truncation: recovery.Truncation{EscalatedMaxTokens: 1000, MaxContinuations: 3}})
		defer a.Close()
		ns, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		c := &recorder{}
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: ns.SessionID, Prompt: prompt("Tell me about the fox")}, c); err != nil {
			t.Fatal(err)
		}
		reqs := m.Requests()
		if len(reqs) != len(script) {
			t.Fatalf("%d requests, want %d", len(reqs), len(script))
		}
		req = reqs[continued]
		var b strings.Builder
		for _, u := range c.updates {
			if u.SessionUpdate == acp.UpdateAgentMessageChunk {
				b.WriteString(u.Content.Text)
			}
		}
		shown = b.String()
		f, err := os.Open(session.Path(dir, string(ns.SessionID)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for sc := bufio.NewScanner(f); sc.Scan(); {
			var ev struct {
				Type string
				Data struct{ Text string }
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == session.TypeAssistantMessage {
				committed += ev.Data.Text
			}
		}
	})
	return req, shown, committed
}

// inPlace checks that msgs end with the partial reply marked as the prefix,
// right after the user's prompt: no continue prompt.
func inPlace(t *testing.T, msgs []mockprovider.Message, partial string) {
	t.Helper()
	last, before := msgs[len(msgs)-1], msgs[len(msgs)-2]
	if last.Role != "assistant" || last.Content != partial || !last.Prefix {
		t.Errorf("last message %+v, want the partial reply %q with prefix: true", last, partial)
	}
	if before.Role != "user" || before.Content != "Tell me about the fox" {
		t.Errorf("before the partial reply: %+v, want the user's prompt and no continue prompt", before)
	}
}

// byPrompt checks that msgs end with the partial reply, unmarked, and the
// continue prompt.
func byPrompt(t *testing.T, msgs []mockprovider.Message, partial string) {
	t.Helper()
	last, before := msgs[len(msgs)-1], msgs[len(msgs)-2]
	if before.Role != "assistant" || before.Content != partial || before.Prefix {
		t.Errorf("before the last message: %+v, want the partial reply %q, unmarked", before, partial)
	}
	if last.Role != "user" || !strings.HasPrefix(last.Content, "Your previous reply was cut off.") {
		t.Errorf("last message %+v, want the continue prompt", last)
	}
}

func ptr[T any](v T) *T { return &v }

var continuedProviders = []struct {
	name, baseURL string
	inPlace       bool
}{
	{"deepseek_beta", "https://api.deepseek.com/beta", true},
	{"mistral", "https://api.mistral.ai/v1", true},
	{"deepseek_v1", "https://api.deepseek.com/v1", false},
	{"openai", "https://api.openai.com/v1", false},
}

// Live: the stream drops after "The quick brown fox ju" was shown. The
// retry continues that text in place where the provider can, with the
// continue prompt elsewhere; either way the committed reply is exactly the
// shown text and the continuation.
func TestAgent_LiveContinuationInPlace(t *testing.T) {
	const whole = "The quick brown fox jumps over the lazy dog."
	for _, pr := range continuedProviders {
		t.Run(pr.name, func(t *testing.T) {
			req, shown, committed := continuation(t, pr.baseURL, true, []mockprovider.Step{
				{Text: whole, Chunks: 6, DropAfter: ptr(3)},
				{Text: "mps over the lazy dog.", Chunks: 2},
			}, 1)
			if pr.inPlace {
				inPlace(t, req.Messages, "The quick brown fox ju")
			} else {
				byPrompt(t, req.Messages, "The quick brown fox ju")
			}
			if shown != whole || committed != whole {
				t.Errorf("shown %q, committed %q, want %q", shown, committed, whole)
			}
		})
	}
}

// Mistral's reply starts with the prefix, which is dropped. Beyond that a
// reply continued in place is never trimmed: it goes on from the prefix and
// cannot repeat it, so text that starts the way the shown text ends, however
// long, is the reply. Continued by prompt, the same text is a repeat and is
// trimmed.
func TestAgent_LiveContinuationInPlaceTrimsOnlyTheEcho(t *testing.T) {
	const whole = "The quick brown fox jumps over the lazy dog."
	const shownPart = "The quick brown fox ju"
	for _, pr := range continuedProviders {
		t.Run(pr.name, func(t *testing.T) {
			again := []string{"mps over the lazy dog."}
			if pr.name == "mistral" {
				again = append(again, shownPart+"mps over the lazy dog.")
			}
			for _, a := range again {
				_, shown, committed := continuation(t, pr.baseURL, true, []mockprovider.Step{
					{Text: whole, Chunks: 6, DropAfter: ptr(3)},
					{Text: a, Chunks: 3},
				}, 1)
				if shown != whole || committed != whole {
					t.Errorf("continued with %q: shown %q, committed %q, want %q", a, shown, committed, whole)
				}
			}
			// The continuation starts with 27 runes that end the shown
			// text, said (the first of two chunks of the same length).
			const said = "Then: the very quick brown fox ju"
			const rest = "the very quick brown fox jumps over the lazy dog and sleeps."
			want := said + "mps over the lazy dog and sleeps."
			if pr.inPlace {
				want = said + rest // its own words, as it wrote them
			}
			_, shown, committed := continuation(t, pr.baseURL, true, []mockprovider.Step{
				{Text: said + "mps over the lazy dog and sleeps.", Chunks: 2, DropAfter: ptr(1)},
				{Text: rest, Chunks: 3},
			}, 1)
			if shown != want || committed != want {
				t.Errorf("shown %q, committed %q, want %q", shown, committed, want)
			}
		})
	}
}

// Live, cut at the output limit after text was shown: continued with the
// larger budget, in place where the provider can.
func TestAgent_LiveTruncationInPlace(t *testing.T) {
	for _, pr := range continuedProviders {
		t.Run(pr.name, func(t *testing.T) {
			req, shown, committed := continuation(t, pr.baseURL, true, []mockprovider.Step{
				{Text: "Part one of the answer, ", FinishReason: llm.FinishLength},
				{Text: "part two."},
			}, 1)
			if pr.inPlace {
				inPlace(t, req.Messages, "Part one of the answer, ")
			} else {
				byPrompt(t, req.Messages, "Part one of the answer, ")
			}
			if req.MaxTokens != 1000 {
				t.Errorf("continued with max_tokens %d, want the escalated 1000", req.MaxTokens)
			}
			if want := "Part one of the answer, part two."; shown != want || committed != want {
				t.Errorf("shown %q, committed %q, want %q", shown, committed, want)
			}
		})
	}
}

// Held: the truncated reply is first retried with the larger budget, then
// the part is continued, in place where the provider can. The parts are
// joined verbatim; Mistral's repeat of the prefix is not part of its part.
func TestAgent_HeldTruncationInPlace(t *testing.T) {
	for _, pr := range continuedProviders {
		t.Run(pr.name, func(t *testing.T) {
			rest := "part B."
			if pr.name == "mistral" {
				rest = "Part A, part B." // its reply repeats the prefix
			}
			req, shown, committed := continuation(t, pr.baseURL, false, []mockprovider.Step{
				{Text: "Part A, ", FinishReason: llm.FinishLength},
				{Text: "Part A, ", FinishReason: llm.FinishLength},
				{Text: rest},
			}, 2)
			if pr.inPlace {
				inPlace(t, req.Messages, "Part A, ")
			} else {
				byPrompt(t, req.Messages, "Part A, ")
			}
			if want := "Part A, part B."; shown != want || committed != want {
				t.Errorf("shown %q, committed %q, want %q", shown, committed, want)
			}
		})
	}
}

package agent_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// TestAgent_LogCompactedBeforeCallsKeptTheirResults: a session whose log a
// Rebound before commit e89f27c compacted (testdata/precut_compaction.jsonl,
// see its .md) keeps, after the summary, a tool result whose call the
// summary replaced. The next turn's request must not send it: a strict
// provider (here the mock in strict alternation, as OpenAI and others
// are) refuses a result that answers no call. The log stays as it was.
func TestAgent_LogCompactedBeforeCallsKeptTheirResults(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "precut_compaction.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := session.Path(dir, "sess_precut")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "Run make test."}}, StrictAlternation: true})
	a := newAgent(t, dir, llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: "sk-test", HTTPClient: m}))
	if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: "sess_precut", Cwd: "/work/project"}, &recorder{}); err != nil {
		t.Fatalf("LoadSession: %v", err)
	}
	resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: "sess_precut", Prompt: prompt("And the tests?")}, &recorder{})
	if err != nil || resp.StopReason != acp.StopEndTurn {
		t.Fatalf("Prompt = %+v, %v; want end_turn (a strict provider took the request)", resp, err)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var got []string
	for _, msg := range reqs[0].Messages[1:] { // after the system prompt
		got = append(got, msg.Role+": "+msg.Content)
	}
	want := []string{
		"user: Summary of the earlier conversation:\nThe user asked what a goroutine is (a cheap concurrent function), then what notes.txt says; the assistant called read_file on it.",
		"assistant: notes.txt says the build uses make.",
		"user: And the tests?",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, fixture) {
		t.Errorf("the log's old events changed: a repair of the request must leave the log as written")
	}
}

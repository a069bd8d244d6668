package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
)

// azureFiltered is Azure OpenAI's answer to a prompt its content filter
// blocks, re-created from the body quoted in compl-ai/compl-ai issue #20 and
// tatsu-lab/alpaca_eval issue #430 (category and severity vary).
const azureFiltered = `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}}}}`

// A prompt the provider's content filter refuses ends the turn as a
// refusal, as a filtered reply does, not as a failed request; the answer
// carries the provider's reason.
func TestAgent_FilteredPromptIsARefusal(t *testing.T) {
	script := &mockprovider.Script{Steps: []mockprovider.Step{{Status: 400, Body: json.RawMessage(azureFiltered)}}}
	if err := script.Validate(); err != nil {
		t.Fatal(err)
	}
	m := mockprovider.New(script)
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://azure.invalid/v1", APIKey: "sk-test", HTTPClient: m})
	a := newAgent(t, t.TempDir(), p)
	s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("q")}, &recorder{})
	if err != nil || resp.StopReason != acp.StopRefusal {
		t.Fatalf("Prompt = %+v, %v; want stopReason refusal", resp, err)
	}
	f, ok := resp.Meta[agent.RefusalMetaKey].(*recovery.Failure)
	if !ok || !f.ContentFilter || !strings.Contains(f.Message, "content management policy") {
		t.Errorf("_meta[%q] = %#v, want the failure facts with the provider's reason", agent.RefusalMetaKey, resp.Meta[agent.RefusalMetaKey])
	}
	if n := m.Count(); n != 1 {
		t.Errorf("requests = %d, want 1: a refusal is not retried", n)
	}
}

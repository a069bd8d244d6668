package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// usageChecker is an editor that, at each usage_update, reads the session
// log from disk and notes whether the step/end holding those numbers is
// already there.
type usageChecker struct {
	editor
	t       *testing.T
	path    string
	seen    int
	missing []uint64
}

func (e *usageChecker) Update(ctx context.Context, id string, u acp.SessionUpdate) error {
	if u.SessionUpdate == acp.UpdateUsage {
		e.seen++
		ld, err := session.Load(e.path)
		if err != nil {
			e.t.Errorf("the log does not load at a usage_update: %v", err)
			return nil
		}
		found := false
		for _, ev := range ld.Events {
			if ev.Type != session.TypeStepEnd {
				continue
			}
			var end session.StepEnd
			if json.Unmarshal(ev.Data, &end) == nil && end.Usage != nil && end.Usage.Used == u.Used {
				found = true
			}
		}
		if !found {
			e.missing = append(e.missing, u.Used)
		}
	}
	return e.editor.Update(ctx, id, u)
}

// Record, then send, for usage too: a usage_update leaves only once the
// step/end that holds its numbers is in the log, for a reply that ends the
// turn, one cut at the output limit and continued, and one whose tools run.
func TestAgent_UsageUpdateAfterItsRecord(t *testing.T) {
	usage := func(prompt, completion int) *llm.Usage {
		return &llm.Usage{PromptTokens: prompt, CompletionTokens: completion}
	}
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		reply(llm.Chunk{Content: "part one"}, llm.Chunk{FinishReason: llm.FinishLength, Usage: usage(100, 7)}),
		reply(llm.Chunk{Content: " and two."}, llm.Chunk{FinishReason: llm.FinishStop, Usage: usage(120, 9)}),
	}}
	a := testAgent(t, Config{Provider: p, ContextWindow: 1000})
	id := newSession(t, a)
	ed := &usageChecker{t: t, path: session.Path(a.cfg.StateDir, id)}
	if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, ed); err != nil {
		t.Fatal(err)
	}
	if ed.seen == 0 {
		t.Fatal("no usage_update was sent")
	}
	if len(ed.missing) > 0 {
		t.Errorf("usage_update sent before the step/end recording it (used %v)", ed.missing)
	}
}

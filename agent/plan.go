package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/session"
)

// The plan is shown as the editor's plan panel only, not also as a tool
// call card: Zed draws the plan above the prompt box, and a card saying
// "Update plan" after every change would repeat it in the thread
// (claude-agent-acp sends TodoWrite the same way). A call with bad
// arguments is not a plan change: it goes the usual way and shows as a
// failed tool call, so nothing the model did is hidden.

// planUpdate is the plan session update for entries: always a list, since
// an empty one clears the panel.
func planUpdate(entries []session.PlanEntry) acp.SessionUpdate {
	u := acp.PlanUpdate(make([]acp.PlanEntry, len(entries)))
	for i, e := range entries {
		u.Entries[i] = acp.PlanEntry{Content: e.Content, Priority: e.Priority, Status: e.Status}
	}
	return u
}

// planSummary is what the model reads back: short, since it knows the plan
// it sent.
func planSummary(entries []session.PlanEntry) string {
	if len(entries) == 0 {
		return "Plan cleared."
	}
	done := 0
	for _, e := range entries {
		if e.Status == acp.PlanStatusCompleted {
			done++
		}
	}
	return fmt.Sprintf("Plan updated: %d of %d done.", done, len(entries))
}

// isPlanUpdate tells a completed update_plan call in the replayed messages:
// it was shown as the plan, not as a tool call.
func isPlanUpdate(m session.Message) bool {
	return m.Role == session.RoleTool && m.ToolName == tools.UpdatePlan && m.Status == session.ToolCompleted
}

// replayPlan sends the session's last plan after the replayed messages, so
// that a loaded session shows the plan it had. The plan is read back from
// the last completed update_plan call's arguments, which parsed and were
// recorded as the plan record when it ran. Nothing is sent for a session
// that never had one.
func replayPlan(ctx context.Context, c acp.Client, sessionID string, msgs []session.Message) error {
	for i := len(msgs) - 1; i >= 0; i-- {
		if !isPlanUpdate(msgs[i]) {
			continue
		}
		args, err := tools.Parse(tools.UpdatePlan, msgs[i].Arguments)
		a, ok := args.(*tools.UpdatePlanArgs)
		if err != nil || !ok {
			return errors.Join(errors.New("replay plan: the recorded update_plan call no longer parses"), err)
		}
		entries := make([]session.PlanEntry, len(a.Entries))
		for i, e := range a.Entries {
			entries[i] = session.PlanEntry(e)
		}
		return c.Update(ctx, sessionID, planUpdate(entries))
	}
	return nil
}

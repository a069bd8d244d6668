package agent

import (
	"encoding/json"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// turnUsage is PromptResponse.usage (unstable ACP): the tokens the model
// requests of turn n used, as their step/end records say (the numbers the
// usage_update sent were made from). Only what the provider reported is
// added up: a step whose usage Rebound estimated has no input and output
// split, and counts for nothing. Nil when no step of the turn reported
// any, so no figure is made up. events is the session's, turn n last.
func turnUsage(events []session.Event, n int) *acp.Usage {
	var u acp.Usage
	var cached uint64
	reported := false
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.Type == session.TypeTurnStart {
			break // the turns before n's
		}
		if ev.Type != session.TypeStepEnd {
			continue
		}
		var d session.StepEnd
		if json.Unmarshal(ev.Data, &d) != nil || d.Turn != n || d.Usage == nil || d.Usage.Estimated {
			continue
		}
		su := d.Usage
		if su.PromptTokens <= 0 && su.CompletionTokens <= 0 {
			continue
		}
		reported = true
		u.InputTokens += uint64(max(su.PromptTokens, 0))
		u.OutputTokens += uint64(max(su.CompletionTokens, 0))
		cached += uint64(min(max(su.CachedTokens, 0), max(su.PromptTokens, 0)))
	}
	if !reported {
		return nil
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	if cached > 0 {
		u.CachedReadTokens = &cached
	}
	return &u
}

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// The slash commands a session offers (available_commands_update, sent
// after each session answer). A prompt whose first text block starts with
// "/name" runs the command; any other "/word" goes to the model as text.
var slashCommands = []acp.AvailableCommand{
	{Name: "retry", Description: "Run the last failed or cancelled turn again, without retyping it"},
	{Name: "init", Description: "Survey the project and write an AGENTS.md for it (you approve the write)"},
	{Name: "status", Description: "Show the provider, model, mode, limits and how the last turn ended"},
}

// initPrompt is the turn /init runs: the model writes AGENTS.md with its
// write tool, so the person approves exactly what is written.
const initPrompt = "/init: Survey this project (its layout, languages, how to build, test and lint it, " +
	"its conventions) and write an AGENTS.md at the project root that tells a coding agent what it " +
	"needs to work here. Keep it short and factual. If an AGENTS.md exists, improve it rather than " +
	"replace what is still true. Write it with your file-writing tool."

// commandsUpdate is the update that offers the slash commands.
func commandsUpdate() acp.SessionUpdate {
	return acp.SessionUpdate{SessionUpdate: acp.UpdateAvailableCommands, AvailableCommands: slashCommands}
}

// slashCommand splits a prompt that starts with a command Rebound knows
// into its name and the rest of its first line; ok is false otherwise.
func slashCommand(prompt []acp.ContentBlock) (name, args string, ok bool) {
	if len(prompt) == 0 || prompt[0].Type != "text" {
		return "", "", false
	}
	text := strings.TrimSpace(prompt[0].Text)
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	// Only the first line is the command: clients append context after it
	// (agent-shell adds the region it was started from).
	line, _, _ := strings.Cut(text[1:], "\n")
	name, args, _ = strings.Cut(strings.TrimSpace(line), " ")
	for _, c := range slashCommands {
		if c.Name == name {
			return name, strings.TrimSpace(args), true
		}
	}
	return "", "", false
}

// slash handles a prompt that is a slash command. A non-nil run is the
// prompt the turn runs instead; a non-empty answer is the command's reply,
// which the turn records and shows without asking the model (answer);
// neither leaves the prompt as it was (not a command).
func (a *Agent) slash(s *sessionState, h *history, prompt []acp.ContentBlock) (run []acp.ContentBlock, answer string) {
	name, args, ok := slashCommand(prompt)
	if !ok {
		return nil, ""
	}
	switch name {
	case "retry":
		if args != "" {
			return nil, fmt.Sprintf("`/retry %s` is not something Rebound can do: `/retry` alone runs the last failed or cancelled turn again.", args)
		}
		last, ok := lastPrompt(h)
		if !ok || !retryable(last.TurnOutcome) {
			return nil, "Nothing to retry: the last turn did not fail and was not cancelled."
		}
		var blocks []acp.ContentBlock
		if err := json.Unmarshal(last.Prompt, &blocks); err != nil || len(blocks) == 0 {
			blocks = []acp.ContentBlock{acp.TextBlock(last.Text)}
		}
		return blocks, ""
	case "init":
		return []acp.ContentBlock{acp.TextBlock(initPrompt)}, ""
	default: // status
		return nil, a.statusText(s, h)
	}
}

// answer ends a turn whose slash command replied without the model: the
// reply is committed as the turn's message before it is shown, like any
// reply, so a load replays the command and its answer.
func (t *turn) answer(ctx context.Context, text string) (acp.PromptResponse, error) {
	resp := acp.PromptResponse{StopReason: acp.StopEndTurn}
	t.msgID = newID("msg_")
	// A step with no model: Rebound answered, nobody was asked.
	t.steps = 1
	_, err := t.s.append(session.TypeStepStart, session.StepStart{Turn: t.number, Step: t.steps})
	if err == nil {
		_, err = t.s.appendSync(session.TypeAssistantMessage, session.AssistantMessage{
			Turn: t.number, Step: t.steps, MessageID: t.msgID, Text: text, FinishReason: "stop",
		})
	}
	if err == nil {
		err = t.endStep(session.OutcomeOK)
	}
	if err != nil {
		err = t.agent.logError(t.s.id, fmt.Errorf("commit a slash command's answer: %w", err))
		t.failed = ownFailure(err)
		t.agent.settle(t, &resp, err)
		return acp.PromptResponse{}, err
	}
	if err := sendChunk(ctx, t.c, t.s.id, acp.UpdateAgentMessageChunk, t.msgID, text); err != nil {
		t.agent.cfg.Logger.Debug().Err(err).Str("session", t.s.id).Msg("the answer to a slash command was not sent")
	}
	t.agent.settle(t, &resp, nil)
	t.agent.noteTurn(ctx, t)
	return resp, nil
}

// lastPrompt is the user message of the session's last turn.
func lastPrompt(h *history) (session.Message, bool) {
	msgs := h.conv.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		// A command Rebound answered itself is not a turn to retry.
		if _, _, cmd := slashCommand([]acp.ContentBlock{acp.TextBlock(msgs[i].Text)}); msgs[i].Role == session.RoleUser && !cmd {
			return msgs[i], true
		}
	}
	return session.Message{}, false
}

// retryable says whether a turn that ended so may be run again by /retry.
func retryable(outcome string) bool {
	switch outcome {
	case string(acp.StopCancelled), session.OutcomeTurnFailed, session.OutcomeTurnInterrupted:
		return true
	}
	return false
}

// statusText is /status's answer: what the session runs with and how its
// last turn ended.
func (a *Agent) statusText(s *sessionState, h *history) string {
	o := s.current()
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s\nMode: %s\n", o.model, o.mode)
	if o.thought != "" {
		fmt.Fprintf(&b, "Reasoning effort: %s\n", o.thought)
	}
	fmt.Fprintf(&b, "Limits: %d model requests per turn", a.cfg.MaxSteps)
	if a.cfg.MaxTokens > 0 {
		fmt.Fprintf(&b, ", %d output tokens per request", a.cfg.MaxTokens)
	}
	if d := a.cfg.Recovery.RequestDeadline; d > 0 {
		fmt.Fprintf(&b, ", %s per request with its retries", d)
	}
	b.WriteString("\n")
	if m := a.cfg.Recovery.FallbackModel; m != "" {
		fmt.Fprintf(&b, "Fallback model: %s\n", m)
	}
	last, ok := lastPrompt(h)
	switch {
	case !ok:
		b.WriteString("No turn yet.")
	case last.TurnOutcome == "":
		b.WriteString("Last turn: still running.")
	default:
		fmt.Fprintf(&b, "Last turn (%d): %s.", last.Turn, last.TurnOutcome)
		if f := turnFailure(s.events, last.Turn); f != "" {
			fmt.Fprintf(&b, " %s", f)
		}
		if retryable(last.TurnOutcome) {
			b.WriteString(" `/retry` runs it again.")
		}
	}
	return b.String()
}

// maxStatusFailure bounds the failure message /status repeats.
const maxStatusFailure = 300

// turnFailure is what the log says the turn's failure was, "" if none.
func turnFailure(events []session.Event, turn int) string {
	for i := len(events) - 1; i >= 0; i-- {
		var end session.TurnEnd
		if events[i].Type != session.TypeTurnEnd || json.Unmarshal(events[i].Data, &end) != nil || end.Turn != turn {
			continue
		}
		var f struct {
			Code    string `json:"code"`
			Status  int    `json:"status"`
			Message string `json:"message"`
		}
		if len(end.Error) == 0 || json.Unmarshal(end.Error, &f) != nil {
			return ""
		}
		if len(f.Message) > maxStatusFailure { // the provider's words, bounded
			f.Message = f.Message[:maxStatusFailure] + "…"
		}
		if f.Status != 0 {
			return fmt.Sprintf("The failure (%s, HTTP %d): %s", f.Code, f.Status, f.Message)
		}
		return fmt.Sprintf("The failure (%s): %s", f.Code, f.Message)
	}
	return ""
}

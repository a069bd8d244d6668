package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// The slash commands a session offers (available_commands_update, sent
// after each session answer). Any other "/word" goes to the model as text.
//
// Where a command is read in a prompt of several blocks (slashCommand,
// resentCommand):
//   - In the first block that is not blank text: some clients send an
//     empty or whitespace-only text block first, which carries nothing a
//     person wrote, so "", "/status" is /status, answered as such, not
//     sent to the model as text that looks like a command.
//   - Only the first line of that block: clients append context after it
//     (agent-shell adds the region it was started from), and blocks after
//     it (a file the person attached) belong to the command's turn.
//   - In the last block, when the blocks before it re-send the prompt of the
//     last turn, which was cancelled or failed: codecompanion.nvim sends
//     again, ahead of what the person types next, every message of a turn
//     that was stopped (it cannot know what the agent got). A person who
//     types /retry there means "run that turn again", not "send the model
//     the cancelled prompt followed by the word /retry"; /status there
//     means the status, not a run of the prompt they just cancelled. The
//     re-sent blocks must be the recorded prompt exactly, then blank blocks
//     or lone commands re-sent from turns cancelled after it, so a prompt
//     that merely ends with a command line is still the model's.
//
// Whether Rebound answered a turn itself is recorded on its turn/start
// (session.TurnStart.Local) as the turn begins, never judged again from
// the recorded prompt (answeredLocally).
var slashCommands = []acp.AvailableCommand{
	{Name: "retry", Description: "Run the last failed or cancelled turn again, without retyping it; `/retry wait` first waits for the time the provider named",
		Input: &acp.AvailableCommandInput{Hint: "wait (optional): first wait until the time the provider named"}},
	{Name: "init", Description: "Survey the project and write an AGENTS.md for it (you approve the write)"},
	{Name: "status", Description: "Show the provider, model, mode, limits and how the last turn ended"},
	{Name: "continue", Description: "Continue the last reply where it stopped, when it was cut short"},
	{Name: "compact", Description: "Summarise the older conversation now, as Rebound does when it overflows"},
}

// initPrompt is the turn /init runs: the model writes AGENTS.md with its
// write tool, so the person approves exactly what is written.
const initPrompt = "/init: Survey this project (its layout, languages, how to build, test and lint it, " +
	"its conventions) and write an AGENTS.md at the project root that tells a coding agent what it " +
	"needs to work here. Keep it short and factual. If an AGENTS.md exists, improve it rather than " +
	"replace what is still true. Write it with your file-writing tool."

// continuePromptText is the turn /continue runs: the history already holds
// the incomplete reply (with the note saying where and why it stopped), so
// the model is asked to go on from there.
const continuePromptText = "/continue: Continue your last reply exactly where it stopped, " +
	"without repeating what you already wrote."

// typedCommand is the slash command a person typed for a turn whose
// recorded prompt is the one the command ran (slash.go): the editor showed
// the command when it was typed, so a replay shows it again, not the
// instruction the model was given.
func typedCommand(prompt string) (string, bool) {
	switch prompt {
	case initPrompt:
		return "/init", true
	case continuePromptText:
		return "/continue", true
	}
	return "", false
}

// nothingToRetry answers /retry and /retry wait after a turn that did not
// fail.
const nothingToRetry = "Nothing to retry: the last turn did not fail and was not cancelled."

// commandsUpdate is the update that offers the slash commands.
func commandsUpdate() acp.SessionUpdate {
	return acp.AvailableCommandsUpdate(slashCommands)
}

// slashCommand splits a prompt whose first block that is not blank text
// starts with a command Rebound knows into its name and the rest of its
// first line; ok is false otherwise.
func slashCommand(prompt []acp.ContentBlock) (name, args string, ok bool) {
	for _, b := range prompt {
		if blank(b) {
			continue
		}
		if b.Type != "text" {
			return "", "", false
		}
		return commandLine(b.Text)
	}
	return "", "", false
}

// blank reports whether b is a text block with nothing but white space.
func blank(b acp.ContentBlock) bool {
	return b.Type == "text" && strings.TrimSpace(b.Text) == ""
}

// commandLine splits text that starts with a command Rebound knows into
// its name and the rest of its first line; ok is false otherwise.
func commandLine(text string) (name, args string, ok bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	line, _, _ := strings.Cut(text[1:], "\n")
	name, args, _ = strings.Cut(strings.TrimSpace(line), " ")
	for _, c := range slashCommands {
		if c.Name == name {
			return name, strings.TrimSpace(args), true
		}
	}
	return "", "", false
}

// resentCommand is the command in a prompt's last block whose blocks
// before it re-send the prompt of the last turn, which was cancelled or
// failed (codecompanion.nvim's shape, see slashCommands): the blocks the
// turn recorded, exactly, then only blank blocks and lone commands (what
// the person typed in turns cancelled since, re-sent with them).
func resentCommand(prompt []acp.ContentBlock, h *history) (name, args string, ok bool) {
	if len(prompt) < 2 {
		return "", "", false
	}
	last := prompt[len(prompt)-1]
	if last.Type != "text" {
		return "", "", false
	}
	if name, args, ok = commandLine(last.Text); !ok {
		return "", "", false
	}
	turn, found := lastPrompt(h)
	if !found || !retryable(turn.TurnOutcome) {
		return "", "", false
	}
	var recorded []acp.ContentBlock
	if json.Unmarshal(turn.Prompt, &recorded) != nil || len(recorded) == 0 || len(recorded) > len(prompt)-1 {
		return "", "", false
	}
	for i, b := range recorded {
		if !sameBlock(b, prompt[i]) {
			return "", "", false
		}
	}
	for _, b := range prompt[len(recorded) : len(prompt)-1] {
		if !blank(b) && !loneCommand(b) {
			return "", "", false
		}
	}
	return name, args, true
}

// loneCommand reports whether b is a text block that is one command line
// and nothing else.
func loneCommand(b acp.ContentBlock) bool {
	_, _, ok := commandLine(b.Text)
	return b.Type == "text" && ok && !strings.Contains(strings.TrimSpace(b.Text), "\n")
}

// sameBlock reports whether a and b are the same block, as the log
// records blocks (their JSON).
func sameBlock(a, b acp.ContentBlock) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && string(ja) == string(jb)
}

// slash handles a prompt that is a slash command. A non-nil run is the
// prompt the turn runs instead; a non-empty answer is the command's reply,
// which the turn records and shows without asking the model (answer);
// neither leaves the prompt as it was (not a command).
// compact says the turn compacts the conversation (compactNow) instead;
// a non-nil wait is waited before run runs (/retry wait, retrywait.go).
// status makes /status's answer (statusText).
func slash(s *sessionState, h *history, prompt []acp.ContentBlock, status func() string) (run []acp.ContentBlock, answer string, compact bool, wait *retryWait) {
	name, args, ok := slashCommand(prompt)
	if !ok {
		name, args, ok = resentCommand(prompt, h)
	}
	if !ok {
		return nil, "", false, nil
	}
	if args != "" && (name == "continue" || name == "compact") {
		return nil, fmt.Sprintf("`/%s %s` is not something Rebound can do: `/%s` takes nothing after it.", name, args, name), false, nil
	}
	switch name {
	case "continue":
		if !lastIncomplete(h) {
			return nil, "Nothing to continue: the last reply was not cut short.", false, nil
		}
		return []acp.ContentBlock{acp.TextBlock(continuePromptText)}, "", false, nil
	case "compact":
		if len(h.out) < 2 { // the system prompt slot alone
			return nil, "Nothing to compact: the conversation has no earlier messages yet.", false, nil
		}
		return nil, "", true, nil
	case "retry":
		if args == "wait" {
			run, answer, wait = retryWaitCommand(s, h, time.Now())
			return run, answer, false, wait
		}
	}
	run, answer = slashAnswer(h, name, args, status)
	return run, answer, false, nil
}

// slashAnswer handles /retry, /init and /status.
func slashAnswer(h *history, name, args string, status func() string) (run []acp.ContentBlock, answer string) {
	switch name {
	case "retry":
		if args != "" {
			return nil, fmt.Sprintf("`/retry %s` is not something Rebound can do: `/retry` alone runs the last failed or cancelled turn again, "+
				"and `/retry wait` first waits for the time the provider named.", args)
		}
		last, ok := lastPrompt(h)
		if !ok || !retryable(last.TurnOutcome) {
			return nil, nothingToRetry
		}
		return retryBlocks(last), ""
	case "init":
		return []acp.ContentBlock{acp.TextBlock(initPrompt)}, ""
	default: // status
		return nil, status()
	}
}

// answer ends a turn whose slash command replied without the model: the
// reply is committed as the turn's message before it is shown, like any
// reply, so a load replays the command and its answer.
func (t *turn) answer(ctx context.Context, text string) (acp.PromptResponse, error) {
	return t.answerWith(ctx, func(context.Context) (string, error) { return text, nil })
}

// answerWith is answer with a reply that produce makes once the step is
// open (a compaction's summary request belongs to it). An error of produce
// ends the step and the turn without an answer.
func (t *turn) answerWith(ctx context.Context, produce func(context.Context) (string, error)) (acp.PromptResponse, error) {
	resp := acp.PromptResponse{StopReason: acp.StopEndTurn}
	// A step with no model: Rebound answered, nobody was asked (a
	// compaction's summary is its own request, counted as such).
	n := t.req.nextAttempt()
	t.out.begin()
	t.out.beginAttempt(n, false)
	_, err := t.s.append(session.TypeStepStart, session.StepStart{Turn: t.number, Step: n, MessageID: t.out.msgID})
	var text string
	if err == nil {
		t.req.open = true
		var perr error
		if text, perr = produce(ctx); perr != nil {
			return t.endUnanswered(ctx, perr)
		}
	}
	if err == nil {
		err = t.out.commitAnswer(text)
	}
	if err == nil {
		err = t.endAttempt(ctx, session.OutcomeOK)
	}
	if err != nil {
		err = t.agent.store.dir.logError(t.s.id, fmt.Errorf("commit a slash command's answer: %w", err))
		t.failed = ownFailure(err)
		t.settle(&resp, err)
		return acp.PromptResponse{}, err
	}
	if err := t.out.flush(ctx); err != nil {
		t.agent.cfg.Logger.Debug().Err(err).Str("session", t.s.id).Msg("the answer to a slash command was not sent")
	}
	t.noteTurn(ctx, t.settle(&resp, nil))
	return resp, nil
}

// endUnanswered ends a command's turn whose reply could not be made: the
// step and the turn end failed, or cancelled when the prompt was.
func (t *turn) endUnanswered(ctx context.Context, err error) (acp.PromptResponse, error) {
	outcome := session.OutcomeFailed
	if isCancelled(ctx) {
		t.cancelled, outcome = true, session.OutcomeCancelled
	}
	if eerr := t.endAttempt(ctx, outcome); eerr != nil {
		t.agent.cfg.Logger.Error().Err(eerr).Str("session", t.s.id).Msg("could not close the step")
	}
	if !t.cancelled && !recorded(err) {
		// The prompt's error says why, in Rebound's words, not a
		// provider's: recorded as the give-up, a load says them too.
		t.obs.ended(ctx, false, shownError(err))
	}
	t.noteTurn(ctx, t.settle(&acp.PromptResponse{}, err))
	if t.cancelled {
		return acp.PromptResponse{StopReason: acp.StopCancelled}, nil
	}
	return acp.PromptResponse{}, err
}

// compactNow is /compact: the overflow recovery's compaction, on request,
// of the history the turn would send. Its summary request is the step's one
// request; the answer says how many messages the summary replaced.
func (t *turn) compactNow(ctx context.Context) (acp.PromptResponse, error) {
	o := t.s.current()
	t.req.mode, t.req.model = o.mode, o.model
	t.req.start = time.Now() // summaryLimit counts request_deadline from here
	return t.answerWith(ctx, func(ctx context.Context) (string, error) {
		before := len(t.msgs.history)
		if err := t.compact(ctx); err != nil {
			switch {
			case errors.Is(err, ErrCompactionNotSmaller):
				return "Nothing to compact: a summary would not be shorter than the conversation.", nil
			case recorded(err) || isCancelled(ctx):
				return "", err
			}
			// The history was not touched: the person is told so, and why
			// (a summary cut at the output limit is never used).
			return "", &acp.RequestError{Code: acp.CodeInternalError, Err: err,
				Message: "Could not compact the conversation: " + strings.TrimRight(strings.TrimPrefix(err.Error(), compactErrPrefix), ". ") + ". It is kept as it was.",
				Data:    FailureData{Failure: recovery.Classify(err), Attempts: t.req.attempts, ElapsedMs: time.Since(t.req.start).Milliseconds()}}
		}
		// [system, old…, kept…] became [system, summary, kept…].
		return fmt.Sprintf("Compacted %d messages into a summary.", before-len(t.msgs.history)+1), nil
	})
}

// lastIncomplete says whether the last turn's last reply was committed
// incomplete (cut short by a failure or a cancel), so /continue has
// something to continue.
func lastIncomplete(h *history) bool {
	last, ok := lastPrompt(h)
	if !ok {
		return false
	}
	msgs := h.conv.Messages()
	for i := len(msgs) - 1; i >= 0 && msgs[i].Seq > last.Seq; i-- {
		if msgs[i].Role == session.RoleAssistant {
			return msgs[i].Incomplete
		}
	}
	return false
}

// lastPrompt is the user message of the session's last turn.
func lastPrompt(h *history) (session.Message, bool) {
	msgs := h.conv.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		// A command Rebound answered itself is not a turn to retry.
		if msgs[i].Role == session.RoleUser && !answeredLocally(msgs[i]) {
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

// statusText is /status's answer: what the session runs with (the
// configuration cfg, the provider, the session's options o) and how its
// last turn ended (h, and the session's events).
func statusText(cfg *Config, provider llm.Provider, o options, h *history, events []session.Event) string {
	var b strings.Builder
	if p, ok := provider.(interface{ Endpoint() string }); ok && p.Endpoint() != "" {
		fmt.Fprintf(&b, "Provider: %s\n", p.Endpoint())
	}
	fmt.Fprintf(&b, "Model: %s\nMode: %s\n", o.model, o.mode)
	if o.thought != "" {
		fmt.Fprintf(&b, "Reasoning effort: %s\n", o.thought)
	}
	fmt.Fprintf(&b, "Limits: %d model requests per turn", cfg.MaxRequests)
	if cfg.MaxTokens > 0 {
		fmt.Fprintf(&b, ", %d output tokens per request", cfg.MaxTokens)
	}
	if d := cfg.Recovery.RequestDeadline; d > 0 {
		fmt.Fprintf(&b, ", %s per request with its retries", d)
	}
	b.WriteString("\n")
	if m := cfg.Recovery.FallbackModel; m != "" {
		fmt.Fprintf(&b, "Fallback model: %s\n", m)
	}
	last, ok := lastPrompt(h)
	switch {
	case !ok:
		b.WriteString("No turn yet.")
	case last.TurnOutcome == "":
		b.WriteString("Last turn: still running.")
	default:
		fmt.Fprintf(&b, "Last turn (%d) %s.", last.Turn, outcomeWords(last.TurnOutcome))
		if r := turnRecovery(events, last.Turn); r != "" {
			fmt.Fprintf(&b, " %s", r)
		}
		if f := turnFailure(events, last.Turn); f != "" {
			fmt.Fprintf(&b, " %s", f)
		}
		if retryable(last.TurnOutcome) {
			b.WriteString(" `/retry` runs it again.")
			b.WriteString(retryWaitStatus(events, last.Turn, time.Now()))
		}
	}
	return b.String()
}

// maxStatusFailure bounds the failure message /status repeats.
const maxStatusFailure = 300

// turnRecovery says what Rebound did about failures in a turn, from the
// log's derivation of its retry chains (session.Recoveries, which replay
// and inspect read too): how many retries, for which failures, the time
// waited as it happened (a wait cancelled early counts what it waited, not
// what was planned), any change a retry made (compact, fallback, ...) and
// how the last chain ended.
func turnRecovery(events []session.Event, turn int) string {
	r := turnRetries{count: map[string]int{}}
	for _, c := range session.Recoveries(events) {
		if c.Turn == turn {
			r.addChain(c)
		}
	}
	if r.retries == 0 {
		return r.held.words()
	}
	return strings.TrimSpace(r.held.words() + " " + r.words() + ".")
}

// turnRetries is what turnRecovery tells of a turn's retry chains.
type turnRetries struct {
	retries, unknown int // unknown: waits a stop of Rebound cut short
	waited           time.Duration
	codes            []string       // the failures retried, in order of first retry
	count            map[string]int // retries per failure code
	actions          []string       // what retries changed, each once
	outcome          string         // how the last chain ended
	held             heldWaits      // the shared rate limit's waits, which are no retries
}

// addChain counts the chain c's retries and waits.
func (r *turnRetries) addChain(c session.Recovery) {
	r.retries += c.Retries
	r.waited += c.Waited
	r.unknown += c.Unknown
	r.outcome = c.Outcome
	for _, w := range c.Waits {
		r.addWait(w)
	}
}

// addWait sorts the wait w, counted in its chain's totals: a hold of the
// shared limit is taken out of them, a retry's failure and change counted.
func (r *turnRetries) addWait(w session.RetryWait) {
	if r.held.add(w) {
		r.retries--
		if w.Known {
			r.waited -= w.Waited
		} else {
			r.unknown--
		}
		return
	}
	code := "UNKNOWN"
	if f := failureOf(w.Record.Failure); f != nil {
		code = string(f.Code)
	}
	if r.count[code] == 0 {
		r.codes = append(r.codes, code)
	}
	r.count[code]++
	if a := w.Record.Action; a != "" && !slices.Contains(r.actions, a) {
		r.actions = append(r.actions, a)
	}
}

// words says what the retries were, with no final full stop.
func (r *turnRetries) words() string {
	var parts []string
	for _, c := range r.codes {
		parts = append(parts, fmt.Sprintf("%s ×%d", c, r.count[c]))
	}
	out := fmt.Sprintf("Rebound made %s (%s), waiting %s in all", recovery.Retries(r.retries), strings.Join(parts, ", "), r.waited.Round(100*time.Millisecond))
	if r.unknown > 0 {
		out += fmt.Sprintf(" (and %d %s cut short when Rebound stopped)", r.unknown, plural(r.unknown, "wait"))
	}
	if len(r.actions) > 0 {
		out += "; what it changed: " + strings.Join(r.actions, ", ")
	}
	if o := chainOutcomes[r.outcome]; o != "" {
		out += "; " + o
	}
	return out
}

// chainOutcomes word how the turn's last retry chain ended
// (session.Recovery.Outcome).
var chainOutcomes = map[string]string{
	session.WaitRecovered:   "then it recovered",
	session.WaitFailed:      "then it gave up",
	session.WaitCancelled:   "then you cancelled",
	session.WaitInterrupted: "then Rebound stopped",
}

// turnFailure is what the log says the turn's failure was, "" if none.
func turnFailure(events []session.Event, turn int) string {
	raw, _, _ := session.TurnError(events, turn)
	f := failureOf(raw)
	if f == nil {
		return ""
	}
	msg := f.Message
	if len(msg) > maxStatusFailure { // the provider's words, bounded
		msg = clipBytes(msg, maxStatusFailure) + "…"
	}
	if f.Status != 0 {
		return fmt.Sprintf("The failure (%s, HTTP %d): %s", f.Code, f.Status, msg)
	}
	return fmt.Sprintf("The failure (%s): %s", f.Code, msg)
}

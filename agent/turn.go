package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// FailureData is the `data` of the JSON-RPC error that answers a prompt whose
// turn failed: the facts of the logical request that failed. The server
// sends it only to clients with acp.ClientCapabilities.RichErrors.
type FailureData struct {
	Failure   *recovery.Failure `json:"failure"`
	Attempts  int               `json:"attempts"`
	ElapsedMs int64             `json:"elapsedMs"`
	// AuthMethods, for a rejected key (auth_required), is how to sign in
	// again.
	AuthMethods []acp.AuthMethod `json:"authMethods,omitempty"`
}

// prompt serves session/prompt (Agent.Prompt): it runs one turn: record the
// prompt, run the agent loop, commit its replies to the log and then to the
// editor, and close the turn in every outcome, a panic included.
func prompt(ctx context.Context, a *Agent, req acp.PromptRequest, c acp.Client) (resp acp.PromptResponse, err error) {
	s, err := useForTurn(a, req.SessionID)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	defer a.store.done(s)

	var t *turn
	defer func() {
		if r := recover(); r != nil {
			resp, err = endPanicked(ctx, &a.cfg.Logger, s, t, r)
		}
	}()
	h, err := s.history()
	if err != nil {
		return acp.PromptResponse{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	// A slash command (slash.go) names the prompt to run, or answers.
	run, answer, compact, wait := slash(s, h, req.Prompt, func() string { return statusText(&a.cfg, a.auth.current(), s.current(), h, s.events) })
	if run != nil {
		req.Prompt = run
	}
	// Taken before this turn's prompt joins the history: not copied, and
	// what the turn adds to h goes after it.
	history := h.withSystem(llm.Message{Role: llm.RoleSystem})
	blocks, err := json.Marshal(req.Prompt)
	if err != nil {
		return acp.PromptResponse{}, fmt.Errorf("encode prompt: %w", err)
	}
	t = newTurn(a, s, c, h.conv.NextTurn())
	text := renderPrompt(req.Prompt)
	// Whether the model will see this prompt is decided here, once, and
	// recorded: the history reads it (answeredLocally).
	local := answer != "" || compact
	if _, err := s.appendSync(session.TypeTurnStart, session.TurnStart{Turn: t.number, Prompt: blocks, Text: text, Local: &local}); err != nil {
		t = nil // no turn to close
		return acp.PromptResponse{}, a.store.dir.logError(s.id, fmt.Errorf("record prompt: %w", err))
	}
	// interrupted.go: at a first prompt, the session here a crash cut.
	noteInterruptedIn(ctx, t, stateLogs(a.cfg.StateDir))
	if answer != "" { // slash.go
		return t.answer(ctx, answer)
	}
	if compact { // slash.go: /compact summarises the history this turn would send
		t.msgs.history, t.msgs.prompt = history, llm.Message{Role: llm.RoleUser, Content: text}
		return t.compactNow(ctx)
	}
	// The session's MCP servers may still be starting; their tools and
	// what failed belong in the first request.
	t.mcp = t.obs.waitMCP(ctx, s.mcp)
	t.runner.mcp = t.mcp
	t.req.mode = s.currentMode()
	history[0] = a.prompt.messages(s, t.runner.ws, t.req.mode, t.mcp != nil, t.start)[0]
	t.msgs.history = history
	t.msgs.prompt = llm.Message{Role: llm.RoleUser, Content: text, Images: promptImages(req.Prompt)}
	t.req.maxTokens = a.cfg.MaxTokens

	resp, err = t.runAfter(ctx, wait) // retrywait.go: /retry wait waits first
	if t.cancelled || err != nil && isCancelled(ctx) {
		t.obs.ended(ctx, true, "")
	}
	if err != nil && recorded(err) {
		// The log failed: Rebound's own failure, reported as such.
		t.failed = ownFailure(err)
		err = a.store.dir.logError(s.id, err)
	}
	t.noteTurn(ctx, t.settle(&resp, err))
	if err == nil {
		resp.Usage = turnUsage(s.events, t.number) // promptusage.go
	}
	if err != nil && isCancelled(ctx) {
		return acp.PromptResponse{StopReason: acp.StopCancelled}, nil
	}
	return resp, err
}

// useForTurn is the session a prompt names, acquired for writing with its
// turnMu held, once there is a provider to run the turn with; busy while
// another use of it runs. The caller ends the use (done).
func useForTurn(a *Agent, id string) (*sessionState, error) {
	s, err := a.sessions.session(id)
	if err != nil {
		return nil, err
	}
	// A key stored since start-up (`rebound login`) is found here.
	if _, err := a.auth.provider(); err != nil {
		return nil, err
	}
	if !s.turnMu.TryLock() {
		return nil, acp.NewSessionBusy(s.id)
	}
	if err := a.store.acquire(s, true); err != nil {
		s.unlockTurn()
		return nil, err
	}
	return s, nil
}

// shownError is the message the editor is shown for a prompt answered
// with err (acp's wireError).
func shownError(err error) string {
	if re, ok := errors.AsType[*acp.RequestError](err); ok {
		return re.Message
	}
	return err.Error()
}

// recorded reports whether err is a failure of the session log.
func recorded(err error) bool {
	_, ok := errors.AsType[*recordError](err)
	return ok
}

// ownFailure describes a failure of Rebound itself (its log, a bug) in the
// shape of failure facts, for the log's turn/end and step/end: never a
// provider's code.
func ownFailure(err error) *recovery.Failure {
	return &recovery.Failure{Code: recovery.Unknown, Message: err.Error()}
}

// endPanicked ends a turn that panicked as a failed one: what the editor
// was shown is committed, the open attempt is closed, every pending tool call
// gets a result and turn/end is written, so the log stays valid and the
// next prompt works. The session's log is read again before its next use.
// The prompt is answered with an internal error.
func endPanicked(ctx context.Context, log *zerolog.Logger, s *sessionState, t *turn, r any) (acp.PromptResponse, error) {
	log.Error().Str("session", s.id).Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).Msg("a turn panicked")
	s.use.reload = true
	msg := fmt.Sprintf("Rebound hit an internal error (a bug: %v)", r)
	if t != nil {
		ended := msg + " and ended this turn; the session is intact, and you can send the prompt again. Please report the bug with Rebound's log."
		closePanicked(ctx, log, t, msg, ended)
		msg = ended
	} else {
		msg += "; the session is intact. Please report the bug with Rebound's log."
	}
	return acp.PromptResponse{}, &acp.RequestError{Code: acp.CodeInternalError, Message: msg,
		Data: map[string]any{"sessionId": s.id, "reason": "internal_error"}}
}

// closePanicked closes a turn that panicked (endPanicked): msg is the
// failure recorded, ended the words of its give-up. A panic on the way is
// logged, and leaves the rest to the log's repair at its next read.
func closePanicked(ctx context.Context, log *zerolog.Logger, t *turn, msg, ended string) {
	s := t.s
	defer func() {
		if r := recover(); r != nil {
			log.Error().Str("session", s.id).Str("panic", fmt.Sprint(r)).Msg("closing a turn that panicked panicked too")
		}
	}()
	f := &recovery.Failure{Code: recovery.Unknown, Message: msg}
	t.failed = f
	if t.out.shownAny() && !t.out.committed {
		if err := t.commitIncomplete(); err != nil {
			log.Error().Err(err).Str("session", s.id).Msg("could not commit the reply shown so far")
		}
	}
	if t.req.open {
		if _, err := s.appendSync(session.TypeStepEnd, session.StepEnd{Turn: t.number, Step: t.req.attempts, Outcome: session.OutcomeFailed, Failure: mustJSON(f)}); err != nil {
			log.Error().Err(err).Str("session", s.id).Msg("could not close the attempt")
		}
	}
	// Recorded as the give-up in the words the prompt's error
	// says, so a load says them too.
	t.obs.ended(ctx, false, ended)
	t.settle(&acp.PromptResponse{}, errors.New(msg))
}

// settle appends turn/end whatever happened: the log's promise is that every
// turn/start has one. titledAt is when that turn/end recorded the session's
// title; zero if it did not.
func (t *turn) settle(resp *acp.PromptResponse, runErr error) (titledAt time.Time) {
	a := t.agent
	// Whatever ended the turn early, every call gets its result first.
	for id := range t.runner.pending {
		if err := t.runner.recordResult(id, toolOutcome{status: session.ToolAborted, output: notRunOutput}); err != nil {
			a.cfg.Logger.Error().Err(err).Str("session", t.s.id).Str("toolCall", id).Msg("could not record a tool result")
		}
	}
	end := session.TurnEnd{Turn: t.number, StopReason: string(resp.StopReason)}
	if runErr != nil {
		if t.cancelled {
			end.StopReason = string(acp.StopCancelled)
		} else {
			if t.failed == nil {
				t.failed = recovery.Classify(runErr)
			}
			end.Error = mustJSON(t.failed)
		}
	}
	if !t.s.listing.titled {
		// The first turn to end gives the session its title (noteTurn
		// tells the editor).
		end.Title = firstPromptTitle(t.s.events)
	}
	if ev, err := t.s.appendSync(session.TypeTurnEnd, end); err != nil {
		a.cfg.Logger.Error().Err(err).Str("session", t.s.id).Int("turn", t.number).Msg("could not record the end of the turn")
	} else if end.Title != "" {
		t.s.listing.title, t.s.listing.titled = end.Title, true
		titledAt = ev.Time
	}
	ev := a.cfg.Logger.Info().Str("session", t.s.id).Int("turn", t.number).Dur("elapsed", time.Since(t.start))
	if runErr != nil && !t.cancelled {
		ev = a.cfg.Logger.Warn().Err(runErr).Str("session", t.s.id).Int("turn", t.number)
	}
	ev.Str("stopReason", end.StopReason).Msg("turn ended")
	return titledAt
}

// noteTurn runs when a turn has ended and settle has recorded it: when its
// turn/end recorded the session's title (at titledAt), the editor is sent it (a
// session_info_update, so its list of threads shows it), and the index
// learns of the turn. Called under s.turnMu with the log open.
func (t *turn) noteTurn(ctx context.Context, titledAt time.Time) {
	s := t.s
	if !titledAt.IsZero() {
		notify(ctx, &t.agent.cfg.Logger, t.c, s.id, acp.SessionInfoUpdate(s.listing.title, isoTime(titledAt)), "could not send the session's title")
	}
	t.agent.store.putSummary(s.summary())
}

// turn is one session/prompt: the agent loop (run) and the state it goes
// on with. What it delegates has its own type: the current request and its
// attempts (request), the model's messages (turnMessages), the reply text
// (emitter), the tools (toolRunner), usage (usageMeter) and compaction
// (compactor).
type turn struct {
	agent  *Agent
	s      *sessionState
	c      acp.Client
	number int
	start  time.Time
	msgs   turnMessages // what the model is sent
	req    request      // the current logical request, its attempts and settings
	mcp    *mcp.Set     // the session's MCP servers, nil when it has none
	// runner runs the committed replies' tool calls, and holds those
	// without a result yet (toolrunner.go).
	runner *toolRunner
	// out records and shows the reply text (emit.go): the one place that
	// decides what of an attempt the editor sees.
	out       *emitter
	usage     *usageMeter // the current attempt's usage (usage.go)
	compactor *compactor  // compaction (compact.go, autocompact.go)
	cancelled bool
	failed    *recovery.Failure // why the turn failed, once it has
	// obs records and shows retries and the other waits (observer.go):
	// the editor's half of the recovery observer.
	obs *observer
}

// newTurn builds turn number of s, for the editor c, and what it delegates
// to.
func newTurn(a *Agent, s *sessionState, c acp.Client, number int) *turn {
	t := &turn{agent: a, s: s, c: c, number: number, start: time.Now()}
	t.obs = newObserver(observer{turn: number, sessionID: s.id,
		record: func(typ string, data any, sync bool) error {
			_, err := s.record(typ, data, sync)
			return err
		},
		send: notifier(&a.cfg.Logger, c, s.id),
		facts: func() requestFacts {
			return requestFacts{step: t.req.attempts, model: t.req.model, maxTokens: t.req.maxTokens, shown: t.out.shownAny()}
		},
		adapt: t.adapt, notices: statusNoticesFor(a.cfg.WaitStatus, c.Capabilities()),
		apiKeyEnv: a.cfg.APIKeyEnv, log: &a.cfg.Logger,
	}, statusCallsFor(a.cfg.WaitStatus, c.Capabilities()))
	t.out = newEmitter(sessionRecorder{s}, sessionJournal{s}, c, s.id, &a.cfg.Logger, a.cfg.Live, t.number)
	t.runner = t.newToolRunner(s.dirs.workspace())
	record := func(typ string, data any) error {
		_, err := s.appendSync(typ, data)
		return err
	}
	t.usage = &usageMeter{window: a.catalog.knownWindow, prices: a.cfg.Prices, last: func() *session.StepUsage {
		if h, err := s.history(); err == nil {
			return h.fill.Last()
		}
		return nil
	}}
	t.compactor = &compactor{
		overflow: a.cfg.Overflow, maxTokens: a.cfg.MaxTokens, limits: a.cfg.Recovery,
		provider: a.auth.current, record: record,
		ed: t.obs, updates: func() bool { return c.Capabilities().Compaction() },
		lastFill: func() (uint64, bool) {
			h, err := s.history()
			if err != nil {
				return 0, false // the turn's own request says what is wrong with the log
			}
			return h.fill.Used()
		},
		window: a.catalog.knownWindow, fullTurn: &s.fullTurn,
		log: &a.cfg.Logger, sessionID: s.id, turn: number,
	}
	return t
}

// newToolRunner builds the turn's runner. The MCP servers join it once the
// turn has waited for them.
func (t *turn) newToolRunner(ws *tools.Workspace) *toolRunner {
	a := t.agent
	record := func(typ string, data any) error {
		_, err := t.s.appendSync(typ, data)
		return err
	}
	mode := func() string { return t.req.mode }
	return &toolRunner{
		ed: t.c, ws: ws, sessionID: t.s.id, turn: t.number,
		record:   record,
		notify:   t.obs.notify,
		answered: t.msgs.add,
		mode:     mode,
		// Read each time: the session may reload its rules from the log.
		gate: &permissionGate{asker: t.c, sessionID: t.s.id, turn: t.number, record: record, mode: mode,
			rules: func() map[string]string { return t.s.rules }, log: &a.cfg.Logger},
		mcp:     (*mcp.Set)(nil),
		cfg:     a.cfg.Tools,
		secrets: func() proc.Secrets { return childSecrets(&a.cfg) },
		log:     &a.cfg.Logger,
	}
}

// continuePrompt asks for the rest of a reply that was cut off (at the
// output limit, or by a failure after it was shown) of a provider that
// cannot continue it in place. It is sent after the partial reply and never
// enters the session's history.
const continuePrompt = "Your previous reply was cut off. Continue exactly where you left off, without repeating anything and without any preamble."

// request is the next attempt's request: the history, the prompt and, when a
// truncated reply is being continued, the partial reply and the request to go
// on, or, for a provider that continues a reply in place, the partial reply
// marked as the prefix to continue.
func (t *turn) request() llm.Request {
	// The session's buffer, not a new slice: a provider keeps nothing of a
	// request once its Stream returns (llm.Provider), and the turn uses a
	// request only until it makes the next.
	msgs := t.msgs.build(t.s.reqBuf[:0], t.out.prefix(), llm.ContinuesInPlace(t.agent.auth.current()))
	offered := toolsFor(t.req.mode)
	if t.req.mode != ModeReadOnly { // an MCP tool may change anything
		offered = append(offered, t.mcp.Tools()...)
	}
	t.s.reqBuf = msgs
	return llm.Request{Model: t.req.model, Messages: msgs, MaxTokens: t.req.maxTokens, ReasoningEffort: t.req.effort, Tools: offered}
}

// compact replaces the turn's history with a summary (compact.go), or
// says why it did not.
func (t *turn) compact(ctx context.Context) error {
	history, err := t.compactor.compact(ctx, t.compaction())
	if err == nil {
		t.msgs.history = history
	}
	return err
}

// adapt changes the next request as a retry's action says (the
// observer's Adapt).
func (t *turn) adapt(ctx context.Context, r recovery.Retry) error {
	switch r.Action {
	case recovery.ActionFallback:
		model := t.agent.cfg.Recovery.FallbackModel
		t.req.fallBack(model, t.agent.menu.reasoningEffort(model, t.s.current().thought))
		t.agent.cfg.Logger.Warn().Str("session", t.s.id).Int("turn", t.number).Str("model", model).Msg("switching to the fallback model for this turn")
		return nil
	case recovery.ActionCompact:
		return t.compact(ctx)
	case recovery.ActionStripImages:
		return t.msgs.stripImages()
	}
	return fmt.Errorf("unknown recovery action %q", r.Action)
}

// compaction is what a compaction of the turn's history works on now.
func (t *turn) compaction() compaction {
	return compaction{history: t.msgs.history, model: t.req.model, step: t.req.attempts, start: t.req.start,
		rest: func() []llm.Message { return t.request().Messages[len(t.msgs.history):] }}
}

// runAfter runs the turn, first waiting out a /retry wait's named time
// (retrywait.go)
// (wait nil: at once). A cancel during the wait ends the turn cancelled,
// as one during a retry's wait does.
func (t *turn) runAfter(ctx context.Context, wait *retryWait) (acp.PromptResponse, error) {
	if wait != nil {
		id, retries, used := t.s.retryChain()
		if err := t.obs.waitNamed(ctx, recovery.Chain{ID: id, Retries: retries, Used: used}, wait); err != nil {
			if isCancelled(ctx) {
				t.cancelled = true
				return acp.PromptResponse{StopReason: acp.StopCancelled}, err
			}
			return acp.PromptResponse{}, err
		}
	}
	return t.run(ctx)
}

// run is the agent loop: each round is one logical request, recovered
// (attempted as often as recovery allows) until its reply is complete and
// committed; when the reply asks for tools they run, their results join the
// conversation and the next request follows. Recovery budgets and the
// recovery deadline apply to each logical request on its own, and never to
// the time tools and permission requests take.
func (t *turn) run(ctx context.Context) (acp.PromptResponse, error) {
	for {
		if t.req.made == t.agent.cfg.MaxRequests {
			t.agent.cfg.Logger.Warn().Str("session", t.s.id).Int("turn", t.number).Int("maxRequests", t.agent.cfg.MaxRequests).Msg("turn stopped at the request limit (agent.max_steps)")
			return acp.PromptResponse{StopReason: acp.StopMaxTurnRequests}, nil
		}
		t.beforeRequest(ctx)
		t.req.made++
		reply, calls, err := t.complete(ctx)
		if err != nil {
			return t.requestFailed(ctx, err)
		}
		if c := llm.ClassifyFinish(reply.FinishReason); len(calls) == 0 || c == llm.FinishTruncated || c == llm.FinishRefused {
			return acp.PromptResponse{StopReason: stopReason(reply.FinishReason)}, nil
		}
		if err := t.runner.useTools(ctx, t.req.attempts, calls); err != nil {
			if isCancelled(ctx) || errors.Is(err, errCancelledDuringTool) {
				t.cancelled = true
				return acp.PromptResponse{StopReason: acp.StopCancelled}, err
			}
			return acp.PromptResponse{}, err
		}
	}
}

// beforeRequest readies the turn for its next request. Options chosen
// since the last request apply from this one: what the mode offers the
// model and what its tool calls may do, the model asked and its reasoning
// effort. They are in the log already (optionRecorder.set). MCP servers that failed
// meanwhile are reported, and a history near the context window compacted.
func (t *turn) beforeRequest(ctx context.Context) {
	o := t.s.current()
	if t.req.apply(o, t.agent.menu.reasoningEffort) { // the system prompt says what the mode allows
		t.msgs.history[0] = t.agent.prompt.messages(t.s, t.runner.ws, o.mode, t.mcp != nil, t.start)[0]
	}
	t.obs.reportMCP(ctx, t.s.mcp.takeFailures())
	if h := t.compactor.compactIfFull(ctx, t.compaction()); h != nil { // autocompact.go
		t.msgs.history = h
	}
}

// requestFailed ends the turn whose logical request failed with err: as
// cancelled, as the provider's refusal, or as failed.
func (t *turn) requestFailed(ctx context.Context, err error) (acp.PromptResponse, error) {
	if isCancelled(ctx) {
		t.cancelled = true
		return acp.PromptResponse{StopReason: acp.StopCancelled}, err
	}
	if f := recovery.Classify(err); !recorded(err) && f.ContentFilter {
		// A filtered prompt is the provider's refusal, as a filtered
		// reply is; its facts (the reason) go with the answer, and
		// the reason is shown.
		t.obs.refused(ctx, f)
		return acp.PromptResponse{StopReason: acp.StopRefusal, Meta: acp.Meta{RefusalMetaKey: f}}, nil
	}
	return acp.PromptResponse{}, t.failure(ctx, err)
}

// complete recovers one logical request until a reply is complete, then
// commits it. Failures go through the executor's policies; a reply cut at
// the output limit is retried once with a larger budget, then continued. The
// committed reply's tool calls are returned, to run only now that it is
// committed; a reply still cut at the limit has none (they may be cut too).
func (t *turn) complete(ctx context.Context) (*llm.Reply, []session.MessageToolCall, error) {
	exec := t.beginRequest()
	// A failure of the log ends recovery at once: it is Rebound's own, so
	// no provider policy (or user rule) may retry it. Cancelling the
	// executor's context is how it is told, without classifying.
	dctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	for {
		got, err := t.recover(dctx, &exec, stop)
		if err != nil {
			return nil, nil, err
		}
		t.obs.recovered(ctx)
		again, err := t.retryCut(ctx, got)
		if err != nil {
			return nil, nil, err
		}
		if again {
			continue
		}
		var calls []session.MessageToolCall
		if !llm.Truncated(got.FinishReason) {
			calls = toolCalls(got.ToolCalls, t.s.toolCallIDs())
		}
		if err := t.commit(ctx, got, calls); err != nil {
			return nil, nil, err
		}
		return got, calls, nil
	}
}

// beginRequest begins a logical request, whose retries go on numbering the
// session's chain, and returns the executor that recovers it.
func (t *turn) beginRequest() recovery.Executor {
	id, retries, used := t.s.retryChain()
	t.obs.chain = recovery.Chain{ID: id, Retries: retries, Used: used}
	t.out.begin()
	t.req.begin(time.Now())
	exec := recovery.Executor{Config: t.agent.cfg.Recovery, Start: t.req.start, Origin: t.s.id}
	if gates := t.agent.cfg.Gates; gates != nil {
		// Asked before each attempt: a fallback switches the model, and so
		// the provider bucket.
		exec.Gate = func() recovery.Gate { return gates(t.req.model) }
	}
	return exec
}

// recover runs attempts through exec until one's reply is finished, and
// returns it. When recovery ends without one, what the user saw stays:
// it is committed as it was. A failure of the log stops ctx (stop).
func (t *turn) recover(ctx context.Context, exec *recovery.Executor, stop context.CancelCauseFunc) (*llm.Reply, error) {
	var got *llm.Reply
	err := exec.Do(ctx, t.obs.chain, t.obs, func(ctx context.Context) error {
		var err error
		got, err = t.runAttempt(ctx)
		if err != nil && recorded(err) {
			stop(err)
		}
		return err
	})
	if err != nil {
		if t.out.shownAny() {
			err = errors.Join(err, t.commitIncomplete())
		}
		return nil, err
	}
	return got, nil
}

// retryCut decides on got when it was cut at the output limit
// (Truncation): to retry it with a larger budget or continue it, which
// closes its attempt and records the retry (again is true), or to commit it
// as it is. A truncated reply is no success of the logical request: every
// policy's count stands until the reply is complete, so a logical request
// makes at most 1 + the sum of the budgets requests.
func (t *turn) retryCut(ctx context.Context, got *llm.Reply) (again bool, err error) {
	if !llm.Truncated(got.FinishReason) {
		return false, nil
	}
	d := t.agent.cfg.Truncation.Decide(recovery.Cut{Shown: t.out.shownAny(), Continued: t.req.continuations, MaxTokens: t.req.maxTokens, Escalated: t.req.escalated(t.agent.cfg.MaxTokens)})
	if d.Action == recovery.ActionNone {
		return false, nil
	}
	if err := t.endAttempt(ctx, session.OutcomeTruncated); err != nil {
		return false, err
	}
	if d.Action == recovery.ActionContinue {
		// What was shown, or this part (held), stays; the next attempt
		// continues it. Escalated, the cut attempt is discarded, never
		// shown.
		t.req.continuations = d.N
		t.out.keep(got)
	}
	t.req.maxTokens = d.MaxTokens
	if err := t.obs.ownRetry(ctx, d.Policy, d.Action, d.N, d.Max); err != nil {
		return false, err
	}
	return true, nil
}

// failure turns a failed turn's error into the wire shape the editor gets: a
// message a person can act on, and the facts in data.
func (t *turn) failure(ctx context.Context, err error) error {
	if recorded(err) {
		t.failed = ownFailure(err)
		return t.agent.store.dir.logError(t.s.id, err)
	}
	f := recovery.Classify(err)
	msg := f.Summary() + ": " + strings.TrimRight(f.Message, ". ") + "."
	if g, ok := recovery.AsGiveUp(err); ok {
		f = g.Failure
		msg = strings.TrimRight(g.Message(), ". ") + "."
		if g.Retries > 0 {
			t.obs.exhausted(ctx, f)
		}
	}
	t.failed = f
	if advice := f.Advice(t.agent.cfg.APIKeyEnv); advice != "" {
		msg += " " + advice
	}
	hints := modelHints{configured: t.agent.menu.defaults().model, from: t.agent.menu.override.fromOr(t.agent.cfg.ModelFrom), models: t.agent.catalog.providerModels}
	if hint := hints.hint(ctx, f, t.req.model, t.req.fellBack); hint != "" { // modelhint.go
		msg += " " + hint
	}
	if hint := retryWaitHint(f, t.agent.cfg.Recovery.Policy.MaxRetryAfter, time.Now()); hint != "" { // retrywait.go
		msg += " " + hint
	}
	t.obs.ended(ctx, false, msg)
	code := acp.CodeInternalError
	if f.Code == recovery.Auth {
		code = acp.CodeAuthRequired
	}
	// The facts are the failed request's, as the message's are: earlier ones
	// and the tools they ran are not part of this recovery.
	data := FailureData{Failure: f, Attempts: t.req.ofRequest(), ElapsedMs: time.Since(t.req.start).Milliseconds()}
	if f.Code == recovery.Auth {
		data.AuthMethods = []acp.AuthMethod{t.agent.auth.apiKeyMethod()}
	}
	return &acp.RequestError{Code: code, Message: msg, Err: err, Data: data}
}

// runAttempt runs one attempt. A failed attempt is closed in the log (held, it
// sent nothing; live, what it showed is kept for the next attempt to
// continue); a finished one is returned, uncommitted, for complete to decide
// on.
func (t *turn) runAttempt(ctx context.Context) (*llm.Reply, error) {
	n := t.req.nextAttempt()
	req := t.request()
	var fixed pairRepairs
	req.Messages, fixed = sendable(req.Messages) // request.go
	if fixed != (pairRepairs{}) {
		t.agent.cfg.Logger.Warn().Str("session", t.s.id).Int("turn", t.number).Int("droppedResults", fixed.dropped).Int("answeredCalls", fixed.answered).
			Msg("the request's history paired a tool call and its result wrongly; repaired before sending")
	}
	last := len(req.Messages) - 1
	t.out.beginAttempt(n, last >= 0 && req.Messages[last].Prefix)
	if _, err := t.s.append(session.TypeStepStart, session.StepStart{Turn: t.number, Step: n, Model: req.Model, ReasoningEffort: req.ReasoningEffort, MessageID: t.out.msgID}); err != nil {
		return nil, fmt.Errorf("record step: %w", err)
	}
	t.req.open = true
	t.usage.reset()
	reply, err := t.receive(ctx, req)
	if err == nil && reply.Empty() && !llm.Refused(reply.FinishReason) {
		err = recovery.ErrEmptyResponse
	}
	if err != nil {
		facts := recovery.Classify(err)
		if recorded(err) {
			facts = ownFailure(err)
		}
		end := session.StepEnd{Turn: t.number, Step: n, Outcome: session.OutcomeFailed, Failure: mustJSON(facts)}
		if isCancelled(ctx) && !recorded(err) {
			end = session.StepEnd{Turn: t.number, Step: n, Outcome: session.OutcomeCancelled}
		}
		end.StreamedChars, end.ShownChars = t.out.streamedChars, t.out.shownChars
		// Classified once: the executor and the turn's error read these.
		err = recovery.WithFacts(facts, err)
		if _, lerr := t.s.appendSync(session.TypeStepEnd, end); lerr != nil {
			err = errors.Join(err, fmt.Errorf("record step end: %w", lerr))
		} else {
			t.req.open = false
		}
		return nil, err
	}
	// The provider request is over: ready how full the context is, for the
	// editor once step/end records it.
	t.usage.ready(req, reply)
	return reply, nil
}

// endAttempt closes the current attempt (its step/end) once it finished,
// then shows the editor the usage that step/end records: record, then send.
func (t *turn) endAttempt(ctx context.Context, outcome string) error {
	usage, u := t.usage.take()
	end := session.StepEnd{Turn: t.number, Step: t.req.attempts, Outcome: outcome, Usage: usage,
		StreamedChars: t.out.streamedChars, ShownChars: t.out.shownChars}
	if _, err := t.s.append(session.TypeStepEnd, end); err != nil {
		return fmt.Errorf("record step end: %w", err)
	}
	t.req.open = false
	if u == nil {
		return nil
	}
	// step/end is appended, not yet written: the file gets it before the
	// editor gets its numbers. A write that fails here shows no usage; the
	// next record reports the disk's error.
	if err := t.s.log.Flush(); err != nil {
		t.agent.cfg.Logger.Debug().Err(err).Str("session", t.s.id).Msg("usage not shown: the step's record was not written")
		return nil
	}
	t.obs.notify(ctx, *u)
	return nil
}

// commit makes the reply final: first in the log, then, in held mode, for
// the editor, which sees it once, in order. Its tool calls are pending
// until each has a result.
func (t *turn) commit(ctx context.Context, last *llm.Reply, calls []session.MessageToolCall) error {
	am, err := t.out.commit(last, calls)
	if err != nil {
		return err
	}
	t.msgs.add(am)
	t.runner.pending = map[string]string{}
	for _, c := range calls {
		t.runner.pending[c.ID] = c.ModelID()
	}
	if err := t.endAttempt(ctx, session.OutcomeOK); err != nil {
		return err
	}
	return t.out.flush(ctx)
}

// commitIncomplete commits what the editor was shown of a request whose
// recovery failed or was cancelled (emit.go); the turn's exchange holds it.
func (t *turn) commitIncomplete() error {
	am, err := t.out.commitIncomplete()
	if err != nil {
		return err
	}
	t.msgs.add(am)
	return nil
}

// receive runs one provider request to its end, handing every chunk to the
// emitter, which records it and, live, sends it.
func (t *turn) receive(ctx context.Context, req llm.Request) (*llm.Reply, error) {
	stream, err := recovery.Watch(ctx, t.agent.auth.current(), req, t.agent.cfg.Recovery.Watchdog)
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var reply llm.Reply
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if err := t.out.end(ctx); err != nil {
				return nil, err
			}
			return &reply, nil
		}
		if err != nil {
			return nil, err
		}
		if err := reply.Add(c); err != nil {
			return nil, err
		}
		if c.HasDelta() {
			// The retry is answering: say so before its reply shows.
			t.obs.recovered(ctx)
		}
		if err := t.out.chunk(ctx, c.Reasoning, c.Content); err != nil {
			return nil, err
		}
	}
}

// stopReason is the one place a finish reason becomes an ACP stop reason,
// by its class (llm.ClassifyFinish, whose table names every reason known):
// a failed attempt's or an unknown reason never gets here, the stream ends
// with an error for them.
func stopReason(finish string) acp.StopReason {
	switch llm.ClassifyFinish(finish) {
	case llm.FinishTruncated:
		return acp.StopMaxTokens
	case llm.FinishRefused:
		return acp.StopRefusal
	}
	return acp.StopEndTurn
}

func isCancelled(ctx context.Context) bool {
	return ctx.Err() != nil
}

// renderPrompt turns the editor's blocks into the text the model reads.
// Embedded resources carry their content; links are named so the model knows
// what the user pointed at.
func renderPrompt(blocks []acp.ContentBlock) string {
	var b strings.Builder
	for i, blk := range blocks {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch blk.Type {
		case "text":
			b.WriteString(blk.Text)
		case "resource_link":
			fmt.Fprintf(&b, "[@%s](%s)", cmp.Or(blk.Name, blk.URI), blk.URI)
		case "resource":
			if r := blk.Resource; r != nil {
				if r.Text != nil {
					fmt.Fprintf(&b, "<context ref=%q>\n%s\n</context>", r.URI, *r.Text)
				} else {
					fmt.Fprintf(&b, "<context ref=%q>(binary content not shown)</context>", r.URI)
				}
			}
		case "image":
			// The image itself goes as an image part; the text names it so the
			// history of later turns, and a placeholder retry, still can.
			fmt.Fprintf(&b, "[image: %s]", imageName(blk, i))
		default:
			fmt.Fprintf(&b, "(a %s block the model cannot read was omitted)", blk.Type)
		}
	}
	return b.String()
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err)) // only our own plain structs reach here
	}
	return b
}

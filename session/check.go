package session

import (
	"bytes"
	"fmt"
	"math"
)

// InvariantError says where a log breaks its rules. Line is the 1-based file
// line (for Conversation, the 1-based index of the event); Seq is the event's
// seq when the line had one.
type InvariantError struct {
	Path string
	Line int
	Seq  int64
	Msg  string
}

func (e *InvariantError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("event %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

// stopCancelled is the stop reason of a cancelled turn (ACP's "cancelled").
const stopCancelled = "cancelled"

// checker is the state machine shared by Load (whole files) and Append
// (every record before it is written), so the writer can never produce a
// log the loader refuses. Each event type has one rule function; a rule
// checks everything before it changes any state, so a refused event leaves
// the checker as it was.
type checker struct {
	path    string
	line    int   // line of the last accepted event
	lastSeq int64 // 0 before session/start
	turn    int   // number of the last turn/start
	open    *openTurn
	// retryIDs holds the retry chains of earlier turns and finished chains
	// of the open one: a chain keeps one id, and an id names one chain.
	retryIDs map[string]bool
	// typed is the Go value an appended event's data was encoded from, if
	// the caller has one (Append); decode uses it instead of the JSON.
	typed any
	// carried is the retry chain of a turn that was interrupted, which the
	// next turn continues.
	carried struct {
		id    string
		retry int
	}
}

type openTurn struct {
	n        int
	line     int // of its turn/start
	lastStep int // highest step started in this turn
	step     int // the open step, 0 if none
	stepMsg  bool
	// lastMsgStep is the step of the last assistant/message, so an
	// incomplete one after the step ended is still one per step.
	lastMsgStep int
	// Tool calls of the last committed reply that have no result yet: id →
	// the line that committed them. Every one needs a tool/result before
	// the next step or the turn's end.
	calls      map[string]int
	callIDs    []string // the same ids, in order, for stable messages
	callNames  map[string]string
	dispatched map[string]bool // pending calls that have a tool/call
	retryID    string          // the current retry chain
	retry      int             // its last retry number
	started    bool            // llm/retry-started seen for that retry
	carried    bool            // retryID came from an interrupted turn and no success has ended it yet
}

type rule func(c *checker, ev Event) error

var rules = map[string]rule{
	TypeSessionStart:     (*checker).sessionStart,
	TypeTurnStart:        (*checker).turnStart,
	TypeStepStart:        (*checker).stepStart,
	TypeAssistantChunk:   (*checker).assistantChunk,
	TypeAssistantMessage: (*checker).assistantMessage,
	TypeStepEnd:          (*checker).stepEnd,
	TypeToolCall:         (*checker).toolCall,
	TypeToolResult:       (*checker).toolResult,
	TypeLLMRetry:         (*checker).llmRetry,
	TypeLLMRetryStarted:  (*checker).llmRetryStarted,
	TypeCompaction:       (*checker).compaction,
	TypePermission:       (*checker).permission,
	TypeMode:             (*checker).mode,
	TypeConfig:           (*checker).config,
	TypeTurnEnd:          (*checker).turnEnd,
	TypePlan:             (*checker).plan,
	TypeStatus:           (*checker).status,
}

func newChecker(path string) *checker {
	return &checker{path: path, retryIDs: make(map[string]bool)}
}

// errorf builds the error for the event on the line after the last accepted.
func (c *checker) errorf(seq int64, format string, args ...any) *InvariantError {
	return &InvariantError{Path: c.path, Line: c.line + 1, Seq: seq, Msg: fmt.Sprintf(format, args...)}
}

// check validates ev as the next event and, if it is valid, advances.
func (c *checker) check(ev Event) error {
	switch {
	case c.lastSeq == 0 && ev.Seq != 1:
		return c.errorf(ev.Seq, "seq %d: the first event must have seq 1", ev.Seq)
	case c.lastSeq != 0 && ev.Seq <= c.lastSeq:
		return c.errorf(ev.Seq, "seq %d after %d: seq must strictly increase", ev.Seq, c.lastSeq)
	case c.lastSeq != 0 && ev.Seq != c.lastSeq+1:
		return c.errorf(ev.Seq, "seq %d after %d: seq must increase by one", ev.Seq, c.lastSeq)
	}
	if ev.V < 1 || ev.V > SchemaVersion {
		return c.errorf(ev.Seq, "v %d: this build reads schema versions 1 to %d", ev.V, SchemaVersion)
	}
	r, ok := rules[ev.Type]
	if !ok {
		return c.errorf(ev.Seq, "unknown event type %q", ev.Type)
	}
	if c.lastSeq == 0 && ev.Type != TypeSessionStart {
		return c.errorf(ev.Seq, "%s: a log must begin with %s", ev.Type, TypeSessionStart)
	}
	if err := r(c, ev); err != nil {
		return err
	}
	c.lastSeq = max(ev.Seq, ev.Through) // a joined run of chunks
	c.line++
	return nil
}

// decode reads an event's data into its struct. Unknown fields are allowed:
// within one schema version, additions are compatible.
func decode[T any](c *checker, ev Event) (T, error) {
	switch t := c.typed.(type) {
	case T:
		return t, nil
	case *T:
		if t != nil {
			return *t, nil
		}
	}
	var v T
	if d := bytes.TrimSpace(ev.Data); len(d) == 0 || d[0] != '{' {
		return v, c.errorf(ev.Seq, "%s: data must be a JSON object", ev.Type)
	}
	if err := Unmarshal(ev.Data, &v); err != nil {
		return v, c.errorf(ev.Seq, "%s: bad data: %v", ev.Type, err)
	}
	return v, nil
}

// inTurn returns the open turn if the event belongs to it.
func (c *checker) inTurn(ev Event, turn int) (*openTurn, error) {
	if c.open == nil {
		return nil, c.errorf(ev.Seq, "%s for turn %d outside a turn", ev.Type, turn)
	}
	if turn != c.open.n {
		return nil, c.errorf(ev.Seq, "%s for turn %d, but turn %d is open", ev.Type, turn, c.open.n)
	}
	return c.open, nil
}

// inStep returns the open turn if the event belongs to its open step.
func (c *checker) inStep(ev Event, turn, step int) (*openTurn, error) {
	t, err := c.inTurn(ev, turn)
	if err != nil {
		return nil, err
	}
	if t.step == 0 {
		return nil, c.errorf(ev.Seq, "%s for step %d of turn %d, but no step is open", ev.Type, step, turn)
	}
	if step != t.step {
		return nil, c.errorf(ev.Seq, "%s for step %d of turn %d, but step %d is open", ev.Type, step, turn, t.step)
	}
	return t, nil
}

func (c *checker) sessionStart(ev Event) error {
	if c.lastSeq != 0 {
		return c.errorf(ev.Seq, "%s again: only the first event may be %s", ev.Type, ev.Type)
	}
	d, err := decode[SessionStart](c, ev)
	if err != nil {
		return err
	}
	if d.SessionID == "" {
		return c.errorf(ev.Seq, "%s: sessionId is empty", ev.Type)
	}
	return nil
}

func (c *checker) turnStart(ev Event) error {
	d, err := decode[TurnStart](c, ev)
	if err != nil {
		return err
	}
	if c.open != nil {
		return c.errorf(ev.Seq, "turn/start for turn %d while turn %d is open: every turn/start needs a turn/end first", d.Turn, c.open.n)
	}
	if d.Turn != c.turn+1 {
		return c.errorf(ev.Seq, "turn/start for turn %d after turn %d: turns go up by one from 1", d.Turn, c.turn)
	}
	c.turn = d.Turn
	c.open = &openTurn{n: d.Turn, line: c.line + 1, calls: make(map[string]int), callNames: make(map[string]string), dispatched: make(map[string]bool),
		retryID: c.carried.id, retry: c.carried.retry, started: c.carried.id != "", carried: c.carried.id != ""}
	c.carried.id, c.carried.retry = "", 0
	return nil
}

func (c *checker) stepStart(ev Event) error {
	d, err := decode[StepStart](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if t.step != 0 {
		return c.errorf(ev.Seq, "step/start for step %d while step %d is open", d.Step, t.step)
	}
	if len(t.callIDs) > 0 {
		id := t.callIDs[0]
		return c.errorf(ev.Seq, "step/start for step %d, but tool call %q (line %d) has no tool/result: every call of a reply is answered before the next request", d.Step, id, t.calls[id])
	}
	if d.Step < 1 {
		return c.errorf(ev.Seq, "step/start for step %d: steps count from 1", d.Step)
	}
	if d.Step <= t.lastStep {
		return c.errorf(ev.Seq, "step/start for step %d after step %d: steps must increase within a turn", d.Step, t.lastStep)
	}
	t.lastStep, t.step, t.stepMsg = d.Step, d.Step, false
	return nil
}

func (c *checker) assistantChunk(ev Event) error {
	d, err := decode[AssistantChunk](c, ev)
	if err != nil {
		return err
	}
	_, err = c.inStep(ev, d.Turn, d.Step)
	return err
}

func (c *checker) assistantMessage(ev Event) error {
	d, err := decode[AssistantMessage](c, ev)
	if err != nil {
		return err
	}
	var t *openTurn
	if d.Incomplete {
		// What a failed, cancelled or interrupted step showed is committed
		// after the step may have ended.
		if t, err = c.inTurn(ev, d.Turn); err == nil && d.Step != t.lastStep {
			err = c.errorf(ev.Seq, "incomplete assistant/message for step %d of turn %d, but its last step is %d", d.Step, d.Turn, t.lastStep)
		}
		if err == nil && len(d.ToolCalls) > 0 {
			err = c.errorf(ev.Seq, "incomplete assistant/message for step %d of turn %d has tool calls: an unfinished reply's calls are never run", d.Step, d.Turn)
		}
	} else {
		t, err = c.inStep(ev, d.Turn, d.Step)
	}
	if err != nil {
		return err
	}
	if t.stepMsg || t.lastMsgStep == d.Step {
		return c.errorf(ev.Seq, "second assistant/message for step %d of turn %d: a step commits at most one", d.Step, d.Turn)
	}
	t.lastMsgStep = d.Step
	seen := map[string]bool{}
	for i, tc := range d.ToolCalls {
		switch {
		case tc.ID == "":
			return c.errorf(ev.Seq, "assistant/message toolCalls[%d]: id is empty", i)
		case tc.Name == "":
			return c.errorf(ev.Seq, "assistant/message toolCalls[%d]: name is empty", i)
		case seen[tc.ID]:
			return c.errorf(ev.Seq, "assistant/message toolCalls[%d]: id %q appears twice", i, tc.ID)
		}
		seen[tc.ID] = true
	}
	for _, tc := range d.ToolCalls {
		t.calls[tc.ID] = c.line + 1
		t.callIDs = append(t.callIDs, tc.ID)
		t.callNames[tc.ID] = tc.Name
	}
	t.stepMsg = true
	t.carried = false // a success ends the carried chain
	return nil
}

func (c *checker) stepEnd(ev Event) error {
	d, err := decode[StepEnd](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inStep(ev, d.Turn, d.Step)
	if err != nil {
		return err
	}
	switch d.Outcome {
	case OutcomeOK, OutcomeFailed, OutcomeCancelled, OutcomeTruncated:
	default:
		return c.errorf(ev.Seq, "step/end outcome %q: want %q, %q, %q or %q", d.Outcome, OutcomeOK, OutcomeFailed, OutcomeCancelled, OutcomeTruncated)
	}
	if d.StreamedChars < 0 || d.ShownChars < 0 {
		return c.errorf(ev.Seq, "step/end: negative character count")
	}
	if u := d.Usage; u != nil {
		switch {
		case d.Outcome != OutcomeOK && d.Outcome != OutcomeTruncated:
			return c.errorf(ev.Seq, "step/end usage on a %s step: only a finished request has one", d.Outcome)
		case u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CachedTokens < 0:
			return c.errorf(ev.Seq, "step/end usage: negative token count")
		case u.Cost != nil && !(*u.Cost >= 0 && *u.Cost < math.Inf(1)):
			return c.errorf(ev.Seq, "step/end usage cost %v: want a finite amount of at least 0", *u.Cost)
		case u.Cost != nil && u.Currency == "":
			return c.errorf(ev.Seq, "step/end usage cost without a currency")
		}
	}
	t.step, t.stepMsg = 0, false
	return nil
}

func (c *checker) toolCall(ev Event) error {
	d, err := decode[ToolCall](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if d.ToolCallID == "" {
		return c.errorf(ev.Seq, "tool/call: toolCallId is empty")
	}
	if d.Step < 1 || d.Step > t.lastStep {
		return c.errorf(ev.Seq, "tool/call %q for step %d, but turn %d has started steps 1 to %d", d.ToolCallID, d.Step, d.Turn, t.lastStep)
	}
	name, ok := t.callNames[d.ToolCallID]
	if _, pending := t.calls[d.ToolCallID]; !ok || !pending {
		return c.errorf(ev.Seq, "tool/call %q is not a call of turn %d's last reply awaiting a result", d.ToolCallID, d.Turn)
	}
	if d.Name != name {
		return c.errorf(ev.Seq, "tool/call %q names tool %q, but the reply asked for %q", d.ToolCallID, d.Name, name)
	}
	if t.dispatched[d.ToolCallID] {
		return c.errorf(ev.Seq, "tool/call %q again: a call is dispatched at most once", d.ToolCallID)
	}
	t.dispatched[d.ToolCallID] = true
	return nil
}

func (c *checker) toolResult(ev Event) error {
	d, err := decode[ToolResult](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if _, ok := t.calls[d.ToolCallID]; !ok {
		return c.errorf(ev.Seq, "tool/result for %q, which is not a tool call of turn %d awaiting a result", d.ToolCallID, d.Turn)
	}
	switch d.Status {
	case ToolCompleted, ToolFailed, ToolAborted:
	default:
		return c.errorf(ev.Seq, "tool/result status %q: want %q, %q or %q", d.Status, ToolCompleted, ToolFailed, ToolAborted)
	}
	t.settle(d.ToolCallID)
	return nil
}

// settle removes an answered call from the pending set.
func (t *openTurn) settle(id string) {
	delete(t.calls, id)
	delete(t.callNames, id)
	delete(t.dispatched, id)
	for i, p := range t.callIDs {
		if p == id {
			t.callIDs = append(t.callIDs[:i], t.callIDs[i+1:]...)
			break
		}
	}
}

func (c *checker) permission(ev Event) error {
	d, err := decode[Permission](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if !t.dispatched[d.ToolCallID] {
		return c.errorf(ev.Seq, "permission for %q, which is not a dispatched tool call of turn %d awaiting a result", d.ToolCallID, d.Turn)
	}
	switch d.Outcome {
	case AllowOnce, AllowAlways, RejectOnce, RejectAlways, PermissionCancelled:
	default:
		return c.errorf(ev.Seq, "permission outcome %q: want allow_once, allow_always, reject_once, reject_always or cancelled", d.Outcome)
	}
	if d.Scope == "" {
		return c.errorf(ev.Seq, "permission for %q: scope is empty", d.ToolCallID)
	}
	return nil
}

func (c *checker) mode(ev Event) error {
	d, err := decode[Mode](c, ev)
	if err != nil {
		return err
	}
	if d.Mode == "" {
		return c.errorf(ev.Seq, "%s: mode is empty", ev.Type)
	}
	return nil
}

func (c *checker) config(ev Event) error {
	d, err := decode[Config](c, ev)
	if err != nil {
		return err
	}
	if d.ConfigID == "" {
		return c.errorf(ev.Seq, "%s: configId is empty", ev.Type)
	}
	return nil
}

func (c *checker) llmRetry(ev Event) error {
	d, err := decode[LLMRetry](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if d.RetryID == "" {
		return c.errorf(ev.Seq, "llm/retry: retryId is empty")
	}
	if d.MaxRetries < 0 || d.DelayMs < 0 || d.PolicyRetry < 0 {
		return c.errorf(ev.Seq, "llm/retry: maxRetries %d, delayMs %d, policyRetry %d: none may be negative", d.MaxRetries, d.DelayMs, d.PolicyRetry)
	}
	if d.RetryID == t.retryID {
		if d.Retry != t.retry+1 {
			return c.errorf(ev.Seq, "llm/retry %d of chain %q after retry %d: retry numbers in a chain go up by one", d.Retry, d.RetryID, t.retry)
		}
	} else {
		if t.carried {
			return c.errorf(ev.Seq, "llm/retry starts chain %q while chain %q, left unfinished by an interrupted turn, has retries left to count: a restart must not reset the retry budget", d.RetryID, t.retryID)
		}
		if c.retryIDs[d.RetryID] {
			return c.errorf(ev.Seq, "llm/retry of chain %q, which ended earlier: a chain keeps one retryId", d.RetryID)
		}
		if d.Retry != 1 {
			return c.errorf(ev.Seq, "llm/retry %d starts chain %q: a chain starts at retry 1", d.Retry, d.RetryID)
		}
		if t.retryID != "" {
			c.retryIDs[t.retryID] = true
		}
		t.retryID = d.RetryID
	}
	t.retry, t.started = d.Retry, false
	return nil
}

func (c *checker) llmRetryStarted(ev Event) error {
	d, err := decode[LLMRetryStarted](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if t.retryID == "" {
		return c.errorf(ev.Seq, "llm/retry-started for %q retry %d, but turn %d has no llm/retry", d.RetryID, d.Retry, d.Turn)
	}
	if d.RetryID != t.retryID || d.Retry != t.retry {
		return c.errorf(ev.Seq, "llm/retry-started for %q retry %d, but the last llm/retry is %q retry %d", d.RetryID, d.Retry, t.retryID, t.retry)
	}
	if t.started {
		return c.errorf(ev.Seq, "llm/retry-started for %q retry %d again", d.RetryID, d.Retry)
	}
	t.started = true
	return nil
}

func (c *checker) compaction(ev Event) error {
	d, err := decode[Compaction](c, ev)
	if err != nil {
		return err
	}
	if _, err := c.inTurn(ev, d.Turn); err != nil {
		return err
	}
	switch {
	case d.Replaced < 0:
		return c.errorf(ev.Seq, "compaction replaces %d messages: the count is not negative", d.Replaced)
	case d.BeforeChars < 0 || d.AfterChars < 0:
		return c.errorf(ev.Seq, "compaction sizes %d and %d: sizes are not negative", d.BeforeChars, d.AfterChars)
	case d.Step < 0:
		return c.errorf(ev.Seq, "compaction for step %d: steps count from 1", d.Step)
	case d.Failed != "" && (d.Replaced != 0 || d.Summary != ""):
		return c.errorf(ev.Seq, "failed compaction replaces %d messages with a summary of %d bytes: a failed compaction replaces nothing", d.Replaced, len(d.Summary))
	}
	return nil
}

func (c *checker) turnEnd(ev Event) error {
	d, err := decode[TurnEnd](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if len(d.Title) > MaxTitleBytes {
		return c.errorf(ev.Seq, "turn/end for turn %d: title is %d bytes, at most %d are allowed", d.Turn, len(d.Title), MaxTitleBytes)
	}
	// A turn that stopped abnormally (failed, cancelled, or closed after a
	// crash) may leave its step open: the step never committed an end, and
	// the log says so. A turn that ended normally must have closed it.
	abnormal := len(d.Error) > 0 || d.StopReason == stopCancelled
	if t.step != 0 && !abnormal {
		return c.errorf(ev.Seq, "turn/end for turn %d while step %d is open: a turn that ends without error or cancellation must close its steps", d.Turn, t.step)
	}
	if len(t.callIDs) > 0 {
		id := t.callIDs[0]
		return c.errorf(ev.Seq, "turn/end for turn %d, but tool call %q (line %d) has no tool/result", d.Turn, id, t.calls[id])
	}
	if d.Interrupted && t.retryID != "" {
		c.carried.id, c.carried.retry = t.retryID, t.retry
	} else if t.retryID != "" {
		c.retryIDs[t.retryID] = true
	}
	c.open = nil
	return nil
}

// MaxTitleBytes bounds a turn/end title.
const MaxTitleBytes = 1024

// plan must belong to a call of the turn awaiting its result, with entries
// from the enums (the agent validated them; a hand-edited log may not).
func (c *checker) plan(ev Event) error {
	d, err := decode[Plan](c, ev)
	if err != nil {
		return err
	}
	t, err := c.inTurn(ev, d.Turn)
	if err != nil {
		return err
	}
	if _, ok := t.calls[d.ToolCallID]; !ok {
		return c.errorf(ev.Seq, "plan for %q, which is not a tool call of turn %d awaiting a result", d.ToolCallID, d.Turn)
	}
	for i, e := range d.Entries {
		switch {
		case e.Content == "":
			return c.errorf(ev.Seq, "plan entry %d: content is empty", i+1)
		case e.Status != "pending" && e.Status != "in_progress" && e.Status != "completed":
			return c.errorf(ev.Seq, "plan entry %d: status %q: want pending, in_progress or completed", i+1, e.Status)
		case e.Priority != "high" && e.Priority != "medium" && e.Priority != "low":
			return c.errorf(ev.Seq, "plan entry %d: priority %q: want high, medium or low", i+1, e.Priority)
		}
	}
	return nil
}

// maxStatusIDBytes bounds a status's id.
const maxStatusIDBytes = 256

// status must belong to the open turn, name its status and one of the
// states, and stay bounded.
func (c *checker) status(ev Event) error {
	d, err := decode[Status](c, ev)
	if err != nil {
		return err
	}
	if _, err := c.inTurn(ev, d.Turn); err != nil {
		return err
	}
	switch {
	case d.StatusID == "" || len(d.StatusID) > maxStatusIDBytes:
		return c.errorf(ev.Seq, "status: statusId is empty or longer than %d bytes", maxStatusIDBytes)
	case d.State != StatusInProgress && d.State != StatusCompleted && d.State != StatusFailed:
		return c.errorf(ev.Seq, "status %q: state %q: want in_progress, completed or failed", d.StatusID, d.State)
	case len(d.Title) > MaxStatusBytes || len(d.Detail) > MaxStatusBytes:
		return c.errorf(ev.Seq, "status %q: title or detail longer than %d bytes", d.StatusID, MaxStatusBytes)
	}
	return nil
}

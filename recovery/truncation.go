package recovery

// A reply cut at the output limit (finish_reason length) is no failure, so
// it never reaches the Executor: the agent asks Truncation.Decide what to do
// and carries it out, numbering the retry in the same chain.

// Policies and actions of a cut reply.
const (
	PolicyTruncation   = "truncation"
	PolicyContinuation = "continuation"

	ActionEscalate Action = "escalate" // the same request, with a larger output budget
	ActionContinue Action = "continue" // ask for the rest of the reply
)

// Truncation configures recovery from replies cut at the output limit.
type Truncation struct {
	EscalatedMaxTokens int // the one retry's output budget; skipped when the budget is already at least this
	MaxContinuations   int // continuation requests after that
}

// Cut is what is known of a reply cut at the output limit.
type Cut struct {
	// Shown: the editor was shown part of it (live), so it is never
	// discarded, only continued.
	Shown bool
	// Continued is how many continuations of this reply were asked so far.
	Continued int
	// MaxTokens is the output budget the cut attempt had; Escalated, that
	// the turn already raised it.
	MaxTokens int
	Escalated bool
}

// CutStep is what to do with a cut reply. Action is ActionNone when the
// reply is committed as it is (the turn stops with max_tokens).
type CutStep struct {
	Action    Action
	Policy    string
	N, Max    int // the retry's number within its policy, and the policy's budget
	MaxTokens int // the next attempt's output budget
}

// Decide says what to do with a cut reply: retry it once with the larger
// budget while nothing of it was kept or shown (the cut attempt is then
// discarded, never seen), else continue it while continuations are left
// (what was shown, or the kept parts, stay), else commit it.
func (t Truncation) Decide(c Cut) CutStep {
	if !c.Shown && c.Continued == 0 && !c.Escalated && c.MaxTokens < t.EscalatedMaxTokens {
		return CutStep{Action: ActionEscalate, Policy: PolicyTruncation, N: 1, Max: 1, MaxTokens: t.EscalatedMaxTokens}
	}
	n := c.Continued + 1
	if n > t.MaxContinuations {
		return CutStep{MaxTokens: c.MaxTokens}
	}
	next := c.MaxTokens
	if c.Shown {
		// Shown, so never discarded: continued, with the larger budget.
		next = max(next, t.EscalatedMaxTokens)
	}
	return CutStep{Action: ActionContinue, Policy: PolicyContinuation, N: n, Max: t.MaxContinuations, MaxTokens: next}
}

package recovery

// ProgressMetaKey is the `_meta` key under which RetryProgress travels to
// the editor.
const ProgressMetaKey = "rebound/retry"

// Retry progress phases: a retry is scheduled (its wait begins), started
// (the wait is over), or cancelled (the prompt was, during the wait); a
// chain is exhausted when recovery gave up.
const (
	PhaseScheduled = "scheduled"
	PhaseStarted   = "started"
	PhaseCancelled = "cancelled"
	PhaseExhausted = "exhausted"
)

// Phases are the phases in the order a retry goes through them.
var Phases = []string{PhaseScheduled, PhaseStarted, PhaseCancelled, PhaseExhausted}

// RetryProgress is the machine-readable payload of `_meta["rebound/retry"]`.
type RetryProgress struct {
	Phase       string   `json:"phase" jsonschema:"enum=scheduled,enum=started,enum=cancelled,enum=exhausted"`
	RetryID     string   `json:"retryId"`
	Retry       int      `json:"retry" jsonschema_description:"1-based number of the retry within its chain"`
	MaxRetries  int      `json:"maxRetries"`
	DelayMs     int64    `json:"delayMs,omitempty" jsonschema_description:"the wait before the retry (scheduled only)"`
	Failure     *Failure `json:"failure,omitempty" jsonschema_description:"the failure that caused the retry, or ended recovery"`
	Policy      string   `json:"policy,omitempty" jsonschema_description:"the policy that decided: transient, rule:N, overflow, fallback, images, truncation, continuation, wait (the user's /retry wait), or shared (a wait on the provider's rate limit every chat shares, before the request was sent: no retry)"`
	PolicyRetry int      `json:"policyRetry,omitempty" jsonschema_description:"1-based number of the retry within its policy, whose budget is maxRetries"`
	Action      string   `json:"action,omitempty" jsonschema_description:"what the retry changes in the request: compact, fallback, strip_images, escalate, continue"`
	Model       string   `json:"model,omitempty" jsonschema_description:"the model the retry uses, when the fallback switched it"`
}

package recovery

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// The words a person reads about a retry, in one place: the status card's
// title and body in each state, the notice, the give-up, the replay of an
// old log, the demo's line and /status all say them through these, so
// they count one way.
//
// They count retries, never attempts: "retry 1 of 2" is the first retry of
// a policy whose budget is 2. That is the number the user sets
// (recovery.max_retries, a rule's max_retries), the one the log and
// _meta["rebound/retry"] carry (retry, policyRetry, maxRetries), and the
// only count that stays true when several policies take turns in one chain
// (an "attempt 2 of 3" of the transient policy after a compaction was the
// request's third). The give-up's error data keeps its attempts: a fact for
// programs, not a phrase.

// PolicyWait is the policy of the wait /retry wait runs: the user's retry
// of the failed request, with a budget of one.
const PolicyWait = "wait"

// ClockAfter is the shortest wait said as a clock time ("at 14:02:10 UTC",
// "until 14:02:10 UTC") rather than a duration ("in 8.0s"): a status's title and body do
// not count down, and a duration a person reads half a minute after it was
// written misleads, where a clock time stays true. Rebound's own backoff
// (max_delay 10 s by default) stays below it; waits the provider names
// (Retry-After, /retry wait) often do not.
const ClockAfter = 30 * time.Second

// Wording words one retry.
type Wording struct {
	Retry Retry
	// Continuing: the stream broke after text was shown, and the retry
	// goes on from it.
	Continuing bool
	Model      string    // the model a fallback switches to
	MaxTokens  int       // the escalated output budget; 0 when not known
	At         time.Time // when the wait began: a long wait's end is said from it
	// Shared counts the chain's shared waits (PolicyShared) so far, which
	// its numbering counts and a give-up's retries do not.
	Shared int
}

// RetryOf is the count of one retry: "retry 1 of 2".
func RetryOf(n, budget int) string { return fmt.Sprintf("retry %d of %d", n, budget) }

// Retries is a number of retries: "1 retry", "2 retries".
func Retries(n int) string {
	if n == 1 {
		return "1 retry"
	}
	return fmt.Sprintf("%d retries", n)
}

// PartOf is a continuation's count: the reply's part n of at most max.
func PartOf(n, most int) string { return fmt.Sprintf("part %d of at most %d", n, most) }

// GaveUp is how recovery's give-up says what it spent: "gave up after 2
// retries in 1.5s", or "gave up without a retry, after 30.0s" when the
// budget allowed none.
func GaveUp(retries int, elapsed time.Duration) string {
	in := fmt.Sprintf("%.1fs", elapsed.Seconds())
	if retries == 0 {
		return "gave up without a retry, after " + in
	}
	return "gave up after " + Retries(retries) + " in " + in
}

// gaveUpUntimed is GaveUp for a replay, which does not know the time.
func gaveUpUntimed(retries int) string {
	if retries == 0 {
		return "gave up without a retry"
	}
	return "gave up after " + Retries(retries)
}

// WaitWords says when what waits d from at runs: "in 8.0s" below
// ClockAfter, else "at 14:02:10 UTC" in the agent's local time (with the
// date when it is not that day's). "" for no wait.
func WaitWords(d time.Duration, at time.Time) string {
	switch {
	case d <= 0:
		return ""
	case d < ClockAfter:
		return fmt.Sprintf("in %.1fs", d.Seconds())
	}
	return "at " + ClockText(at.Add(d), at)
}

// until is when a wait of d from at ends, as a clock time.
func until(d time.Duration, at time.Time) string { return "until " + ClockText(at.Add(d), at) }

// ClockText is a time a person reads in their own zone: "14:32:05 CET",
// with the date when it is not now's day.
func ClockText(at, now time.Time) string {
	at, now = at.Local(), now.Local()
	if y, m, d := at.Date(); y != now.Year() || m != now.Month() || d != now.Day() {
		return at.Format("2006-01-02 15:04:05 MST")
	}
	return at.Format("15:04:05 MST")
}

// ShortDuration is a duration without its zero tail: "24h", "40m", "1m30s".
func ShortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	for _, z := range []string{"0s", "0m"} {
		if len(s) > len(z)+1 && s[len(s)-len(z):] == z && s[len(s)-len(z)-1] >= 'a' {
			s = s[:len(s)-len(z)]
		}
	}
	return s
}

// summary is f's Summary, or a neutral phrase for facts that are missing
// (a replayed log's that did not decode).
func summary(f *Failure) string {
	if f == nil {
		return "The request failed"
	}
	return f.Summary()
}

// Subject is what happened, the status title's first words and the
// notice's title: "Rate limited by the provider (429)".
func (w Wording) Subject() string {
	if h := w.held(); h != nil {
		return heldSubject(h)
	}
	switch w.Retry.Action {
	case ActionStripImages:
		return "The model does not accept images"
	case ActionEscalate, ActionContinue:
		return "The reply was cut at the output limit"
	}
	return summary(w.Retry.Failure)
}

// count is the retry's count within its policy; a log written before
// retries were numbered per policy numbers it in the chain only.
func (w Wording) count() string { return RetryOf(cmp.Or(w.Retry.PolicyN, w.Retry.N), w.Retry.Max) }

func (w Wording) wait() string { return WaitWords(w.Retry.Delay, w.At) }

// waiting is the title's tail while the retry waits: what it does and when.
func (w Wording) waiting() string {
	r := w.Retry
	switch {
	case r.Policy == PolicyShared:
		return "sending " + w.wait()
	case r.Policy == PolicyWait:
		if r.Delay < ClockAfter {
			return "running the turn again " + w.wait()
		}
		return "waiting " + until(r.Delay, w.At) + " to run the turn again"
	case r.Action == ActionCompact:
		return "summarising older messages"
	case r.Action == ActionFallback:
		return "switching to " + w.Model
	case r.Action == ActionStripImages:
		return "retrying without the images"
	case r.Action == ActionEscalate:
		return "retrying with a larger output budget"
	case r.Action == ActionContinue:
		return "asking to continue (" + PartOf(r.PolicyN+1, r.Max+1) + ")"
	}
	when := ""
	if r.Delay > 0 {
		when = " " + w.wait()
	}
	if w.Continuing {
		return "continuing" + when + " (" + w.count() + ")"
	}
	return w.count() + when
}

// Description is the sentence that says what the retry does, the notice's
// description and the first line of the status's body while it waits:
// "Retrying in 8.0s (retry 1 of 2): the provider asked to wait 8 s
// (Retry-After)".
func (w Wording) Description() string {
	r := w.Retry
	when := ""
	if r.Delay > 0 {
		when = " " + w.wait()
	}
	switch r.Action {
	case ActionCompact:
		return "Summarising older messages and retrying"
	case ActionFallback:
		return fmt.Sprintf("Switching to %s for this turn; retrying%s", w.Model, when)
	case ActionStripImages:
		return "Retrying with the images replaced by placeholders"
	case ActionEscalate:
		if w.MaxTokens == 0 {
			return "Retrying with a larger output budget"
		}
		return fmt.Sprintf("Retrying with a larger output budget (%d tokens)", w.MaxTokens)
	case ActionContinue:
		return "Asking the model to continue (" + PartOf(r.PolicyN+1, r.Max+1) + ")"
	}
	if h := w.held(); h != nil {
		return w.heldDescription(h)
	}
	if r.Policy == PolicyWait {
		wait := ShortDuration(r.Delay)
		if r.Delay >= ClockAfter {
			wait = until(r.Delay, w.At)
		}
		return "Waiting " + wait + " for the time the provider named, then running the turn again (/retry wait)"
	}
	d := "Retrying" + when + " (" + w.count() + ")"
	if w.Continuing {
		d = "Continuing the reply from where it stopped" + when + " (" + w.count() + ")"
	}
	if strings.HasPrefix(r.Policy, "rule:") {
		d += ", " + strings.Replace(r.Policy, "rule:", "by rule ", 1)
	}
	if r.Failure != nil {
		if ra := r.Failure.RetryAfterText(); ra != "" {
			d += ": " + ra
		}
	}
	return d
}

// done is what recovering from the retry's failure means, the title's last
// word when it did.
func (w Wording) done() string {
	r := w.Retry
	switch {
	case r.Policy == PolicyShared:
		return "sent after the wait"
	case r.Policy == PolicyWait:
		return "waited and ran the turn again"
	case r.Action == ActionCompact:
		return "summarised and recovered"
	case r.Action == ActionFallback:
		return "switched model and recovered"
	case r.Action == ActionStripImages:
		return "recovered without the images"
	case r.Action == ActionEscalate:
		return "retried with a larger output budget"
	case r.Action == ActionContinue:
		return "continued"
	}
	return "recovered on " + w.count()
}

// said is the provider's own words, or what Rebound saw when the provider
// said nothing, which every body of the status ends with: what the retry
// was about stays readable after it ended.
func (w Wording) said() string {
	if d := Said(w.Retry.Failure); d != "" {
		return "\n\n" + d
	}
	return ""
}

// Said is a status's last paragraph about failure f: "The provider said:
// …" when the provider said it (FromProvider), else "What happened: …"
// (a refused connection, a stream that ended early, a watchdog: nobody
// answered those); "" without a message.
func Said(f *Failure) string {
	if f == nil || f.Message == "" {
		return ""
	}
	d := "What happened: " + f.Message
	if f.FromProvider() {
		d = "The provider said: " + f.Message
	}
	if f.RequestID != "" && !strings.Contains(f.Message, f.RequestID) {
		d += " (request " + f.RequestID + ")"
	}
	return d
}

// capital is s with its first letter upper case.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// The status card's states: each gives the title and the body, which say
// the same thing (a client that stops drawing titles, codecompanion after
// a cancel, still shows the body).

// Scheduled: the retry waits.
func (w Wording) Scheduled() (title, body string) {
	return w.Subject() + ", " + w.waiting(), w.Description() + "." + w.said()
}

// Started: the wait is over and the retry's request runs.
func (w Wording) Started() (title, body string) {
	switch w.Retry.Policy {
	case PolicyWait:
		return w.Subject() + ", running the turn again now", "The wait is over; running the turn again." + w.said()
	case PolicyShared:
		return w.Subject() + ", sending now", "The wait is over; sending the request." + w.said()
	}
	return w.Subject() + ", retrying now", "Retrying now (" + w.count() + ")." + w.said()
}

// Recovered: the request the retry belonged to succeeded.
func (w Wording) Recovered() (title, body string) {
	d := w.done()
	return w.Subject() + ", " + d, capital(d) + "." + w.said()
}

// Cancelled: the user cancelled the turn; running says whether the retry's
// request had begun (else it was still waiting).
func (w Wording) Cancelled(running bool) (title, body string) {
	what := "Cancelled during the wait; " + w.count() + " did not run."
	switch {
	case w.Retry.Policy == PolicyShared && running:
		what = "Cancelled while the request ran."
	case w.Retry.Policy == PolicyShared:
		what = "Cancelled during the wait; the request was not sent."
	case w.Retry.Policy == PolicyWait && running:
		what = "Cancelled while the turn ran again."
	case w.Retry.Policy == PolicyWait:
		what = "Cancelled during the wait; the turn did not run again."
	case running:
		what = "Cancelled during " + w.count() + "."
	}
	return w.Subject() + ", cancelled", what + w.said()
}

// GaveUp: the retries did not recover the request and the turn failed. The
// failed prompt's error, which every client shows after the card, says the
// rest (the provider's words, what to do); a replay, which has none, shows
// the error's words instead (agent/statuscards.go).
func (w Wording) GaveUp() (title, body string) {
	g := gaveUpUntimed(max(w.Retry.N-w.Shared, 0))
	return w.Subject() + "; " + g, capital(g) + "; the error below says why and what to do."
}

// Interrupted: Rebound stopped while the status was open (a replay says it).
func (w Wording) Interrupted() (title, body string) {
	during := w.count()
	if w.Retry.Policy == PolicyShared {
		during = "the wait"
	}
	return w.Subject() + ", " + Interrupted, "Rebound stopped during " + during + "; the next prompt goes on from it." + w.said()
}

// Interrupted is the words a status open when Rebound stopped ends with.
const Interrupted = "interrupted (Rebound stopped)"

// StoppedMark is what a replay shows where Rebound stopped in a turn (a
// crash, a kill): after the part of the reply the user saw, or, when it
// had shown none or went on after it, at the turn's end. The live status of such a turn says
// Interrupted; the model is told the same (agent/history.go).
func StoppedMark(replied bool) string {
	if replied {
		return "[Interrupted: Rebound stopped before this reply finished; the next prompt goes on from it.]"
	}
	return "[Interrupted: Rebound stopped before this turn finished; the next prompt goes on from it.]"
}

// GaveUpAfter is a give-up replayed from an old log, which recorded its
// retries but not the words shown: "<subject>; gave up after 2 retries:
// <the provider's message>", the live give-up's words without its time.
func (w Wording) GaveUpAfter(retries int, message string) string {
	s := w.Subject() + "; " + gaveUpUntimed(retries)
	if message != "" {
		s += ": " + message
	}
	return s
}

// PolicyShared is the policy of a wait the shared rate limit asks for
// before a request is sent (a Gate's Hold): recorded and shown as a
// retry's wait is, counted in no retry budget.
const PolicyShared = "shared"

// HeldBy is who learnt the shared limit, in words; a value Rebound does not
// write (a hand-edited log) names nobody in particular.
func HeldBy(by string) string {
	switch by {
	case HoldBySelf:
		return "this chat"
	case HoldByOtherChat, HoldByOtherProcess:
		return by
	}
	return "another chat or process"
}

// from is " (source)", or "" when the gate named no source.
func from(source string) string {
	if source == "" {
		return ""
	}
	return " (" + source + ")"
}

// HoldMessage is what a hold says happened, the message of its facts:
// "another chat reached the provider's rate limit
// (x-ratelimit-reset-requests)". It names no duration: a card's body does
// not count down (retryAfterMs has it).
func HoldMessage(h Held, source string) string {
	if h.Reason == HoldPacing {
		return fmt.Sprintf("the provider's rate limit is nearly used up, as %s learnt%s: requests are spread over what is left of it", HeldBy(h.By), from(source))
	}
	return fmt.Sprintf("%s reached the provider's rate limit%s", HeldBy(h.By), from(source))
}

// holdWhy is why recovery gives up on a hold of d rather than wait:
// "the limit, reached by another chat, resets in 40s
// (x-ratelimit-reset-requests), longer than max_retry_after (10s)"; bound
// is the limit the wait passes.
func holdWhy(h Held, d time.Duration, source, bound string) string {
	if h.Reason == HoldPacing {
		return fmt.Sprintf("the limit is nearly used up (as %s learnt) and the next request may go in %s%s, %s", HeldBy(h.By), d, from(source), bound)
	}
	return fmt.Sprintf("the limit, reached by %s, resets in %s%s, %s", HeldBy(h.By), d, from(source), bound)
}

// HeldSummary is the summary of a held request's facts.
const HeldSummary = "Held by the provider's shared rate limit"

// held is the retry's hold, or nil when it is no shared wait.
func (w Wording) held() *Held {
	if w.Retry.Policy != PolicyShared {
		return nil
	}
	if f := w.Retry.Failure; f != nil && f.Held != nil {
		return f.Held
	}
	return &Held{}
}

// heldSubject is a shared wait's subject: who reached the limit, or that it
// is nearly used up.
// It is short: the title's variable part (how long, until when) must come
// before the 60th character, where codecompanion cuts a title; the body
// says whose the limit is at length.
func heldSubject(h *Held) string {
	if h.Reason == HoldPacing {
		return "Rate limit nearly used up"
	}
	return "Rate limit hit by " + heldByShort(h.By)
}

// heldByShort is HeldBy for a title: "another Rebound" for another
// process, which to a person is another editor window or script.
func heldByShort(by string) string {
	switch by {
	case HoldByOtherProcess:
		return "another Rebound"
	case HoldBySelf, HoldByOtherChat:
		return HeldBy(by)
	}
	return "another chat or Rebound"
}

// heldDescription is what a shared wait does, and why every chat waits.
func (w Wording) heldDescription(h *Held) string {
	when := w.wait()
	if h.Reason == HoldPacing {
		return "Sending the request " + when + ", spreading requests over what is left of the limit, which every chat and Rebound process using this provider shares"
	}
	return "Sending the request " + when + ", when the limit resets; every chat and Rebound process using this provider waits for it"
}

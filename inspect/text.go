package inspect

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// messageWidth is how much of a failure message the table shows: enough for
// the request id that some messages carry near their end.
const messageWidth = 160

// timeLayout shows absolute times to the millisecond, which is the log's
// useful precision, in the zone the log recorded.
const timeLayout = "2006-01-02 15:04:05.000Z07:00"

// Text writes the timeline for a terminal: a header for the session, then
// per turn a summary and an aligned table of its attempts, with times
// relative to the turn's start ("+1.500s") so a turn reads on its own even
// in a session that spans days.
func (tl *Timeline) Text(w io.Writer) error {
	// Everything printed comes from a log that may hold anything: the whole
	// page is cleaned of control characters (but its newlines) on the way
	// out, so no field can move the cursor or recolour the terminal.
	bw := bufio.NewWriter(cleanWriter{w})
	s := tl.Session
	head := []string{"session " + s.ID, "cwd " + s.Cwd}
	if s.Model != "" {
		head = append(head, "model "+s.Model)
	}
	if s.AgentVersion != "" {
		head = append(head, "agent "+s.AgentVersion)
	}
	fmt.Fprintln(bw, clean(strings.Join(head, " · ")))
	if s.Log != "" {
		fmt.Fprintln(bw, "log     "+clean(s.Log))
	}
	fmt.Fprintf(bw, "started %s · %s · %s in turns\n", s.Start.Format(timeLayout),
		strings.Join(append([]string{plural(tl.Totals.Turns, "turn")}, totals(tl.Totals)...), " · "),
		dur(tl.Totals.ElapsedMs))
	if u := tl.Usage; u != nil {
		fmt.Fprintln(bw, "usage   "+usageText(u, "context at end "))
	}
	for _, t := range tl.Turns {
		fmt.Fprintln(bw)
		writeTurn(bw, t, s.Model)
	}
	return bw.Flush()
}

func totals(t Totals) []string {
	attempts := plural(t.Attempts, "attempt")
	if t.Failed > 0 {
		attempts += fmt.Sprintf(", %d failed", t.Failed)
	}
	if t.Retries == 0 {
		return []string{attempts, "no retries"}
	}
	return []string{attempts, plural(t.Retries, "retry"), "waited " + dur(t.WaitedMs)}
}

func writeTurn(w io.Writer, t *Turn, sessionModel string) {
	fmt.Fprintf(w, "turn %d · %s · %s\n", t.Turn, t.Start.Format(timeLayout), quote(t.Prompt, 60))
	fmt.Fprintf(w, "  %s\n", turnSummary(t))
	if t.Usage != nil {
		fmt.Fprintf(w, "  %s\n", usageText(t.Usage, "context "))
	}
	tb := &table{}
	tb.row(columns...)
	for _, r := range turnRows(t, sessionModel) {
		tb.row(r.Cells...)
		for _, n := range r.Notes {
			tb.note(n)
		}
	}
	tb.write(w, "  ")
}

func turnSummary(t *Turn) string {
	return fmt.Sprintf("%s · %s · took %s", outcomeWord(t.Outcome), strings.Join(totals(t.Totals), " · "), dur(t.Totals.ElapsedMs))
}

// usageText says a turn's or a session's usage in one line: the context at
// the end (with the window and its fill when known), the token counts, the
// cost when one was recorded. Every figure is the log's; none is filled in.
func usageText(u *Usage, contextWord string) string {
	parts := []string{contextWord + contextText(u.Used, u.Size, u.Estimated)}
	// A turn whose every step was estimated has no counts: saying 0 would
	// claim the provider reported 0.
	if u.PromptTokens > 0 || u.CompletionTokens > 0 || u.Unreported == 0 {
		prompt := "prompt " + tokens(uint64(max(u.PromptTokens, 0)))
		if u.CachedTokens > 0 {
			prompt += " (" + tokens(uint64(u.CachedTokens)) + " cached)"
		}
		parts = append(parts, prompt, "completion "+tokens(uint64(max(u.CompletionTokens, 0))))
	}
	if u.Unreported > 0 {
		// The provider sent no usage for these requests: their tokens
		// are Rebound's estimate, which the context figure says (est.).
		parts = append(parts, "tokens of "+plural(u.Unreported, "request")+" estimated (the provider did not count them)")
	}
	if u.Cost != nil {
		parts = append(parts, "cost "+money(*u.Cost)+" "+oneLine(u.Currency, 12))
	}
	return strings.Join(parts, " · ")
}

// contextText is "2,600/128,000 tokens (2.0%)", with "est." in the
// parentheses for an estimate; without a known window, no fill.
func contextText(used, size uint64, estimated bool) string {
	ctx := tokens(used)
	if size > 0 {
		ctx += "/" + tokens(size)
	}
	ctx += " tokens"
	var paren []string
	if size > 0 {
		// Past 1000% the figure says only that the log is wrong; a hostile
		// one would otherwise print twenty digits.
		if fill := float64(used) / float64(size) * 100; fill < 1000 {
			paren = append(paren, fmt.Sprintf("%.1f%%", fill))
		} else {
			paren = append(paren, "over 999%")
		}
	}
	if estimated {
		paren = append(paren, "est.")
	}
	if len(paren) > 0 {
		ctx += " (" + strings.Join(paren, ", ") + ")"
	}
	return ctx
}

// tokens writes a count with thousands separators: "128,000".
func tokens(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// money writes an amount as a plain decimal ("0.0031"); one too large for
// that to stay short (only a hostile log has one) in exponent form.
func money(v float64) string {
	if math.Abs(v) < 1e12 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// columns head the table of a turn, in text and HTML alike.
var columns = []string{"step", "at", "took", "outcome", "status", "request", "then"}

// row is one line of a turn's table: an attempt, a compaction or the end.
type row struct {
	Kind  string // "step", "compaction" or "end"
	Cells []string
	Notes []string
}

// turnRows lays a turn out as table rows, compactions in their place among
// the attempts and the end last.
func turnRows(t *Turn, sessionModel string) []row {
	var rows []row
	between := &betweenSteps{compactions: t.Compactions, holds: t.Holds}
	if r := t.Wait; r != nil { // /retry wait, before the first attempt
		rows = append(rows, row{Kind: "compaction", Cells: []string{"·", offset(r.AtMs), "", "wait", "", "", retryText(r)}})
	}
	for i, s := range t.Steps {
		rows = between.upTo(i, rows)
		// A fallback is noted where the model changes, not on every step.
		switched := s.Fallback && (i == 0 || t.Steps[i-1].Model != s.Model)
		rows = append(rows, stepRow(s, sessionModel, switched))
	}
	rows = between.upTo(len(t.Steps), rows)
	return append(rows, endRow(t))
}

// betweenSteps is what a turn's table shows between its attempts, in the
// order of the steps they came after: compactions, then holds.
type betweenSteps struct {
	compactions []Compaction
	holds       []*Retry
}

// upTo appends to rows those that came after at most upTo steps had
// started, and drops them from b.
func (b *betweenSteps) upTo(upTo int, rows []row) []row {
	for len(b.compactions) > 0 && b.compactions[0].after <= upTo {
		c := b.compactions[0]
		b.compactions = b.compactions[1:]
		rows = append(rows, row{Kind: "compaction", Cells: []string{"·", offset(c.AtMs), "", "compaction", "", "", compactionText(c)}})
	}
	for len(b.holds) > 0 && b.holds[0].after <= upTo {
		h := b.holds[0]
		b.holds = b.holds[1:]
		rows = append(rows, row{Kind: "compaction", Cells: []string{"·", offset(h.AtMs), "", "hold", "", "", holdText(h)}})
	}
	return rows
}

// stepRow is an attempt's row; switched says it is the first on a
// fallback model.
func stepRow(s *Step, sessionModel string, switched bool) row {
	outcome, status, req := s.Outcome, "", ""
	if f := s.Failure; f != nil && s.Outcome != session.OutcomeOK {
		// An interrupted step's facts are the reloading process's
		// ABORTED; the outcome says more than that code.
		if s.Outcome == session.OutcomeFailed {
			outcome = f.Code
		}
		status, req = httpStatus(f.Status), f.RequestID
	}
	return row{Kind: "step",
		Cells: []string{strconv.Itoa(s.Step), offset(s.StartMs), dur(s.DurationMs), outcome, status, req, then(s)},
		Notes: notes(s, sessionModel, switched)}
}

// endRow is the row that says how the turn ended.
func endRow(t *Turn) row {
	o := t.Outcome
	var status, req, text string
	switch o.Status {
	case TurnFailed:
		if e := o.Error; e != nil {
			status, req = httpStatus(e.Status), e.RequestID
			text = e.Code + ": " + oneLine(e.Message, messageWidth)
		}
	case TurnInterrupted:
		text = "the process died during the turn; a later process closed it on load"
	case TurnOpen:
		text = "the log ends here: the turn is still running, or its process died"
	}
	return row{Kind: "end", Cells: []string{"end", offset(ms(t.End.Sub(t.Start))), "",
		outcomeWord(Outcome{Status: o.Status, StopReason: o.StopReason}), status, req, text}}
}

// httpStatus is a failure's HTTP status for its cell: "" for none.
func httpStatus(status int) string {
	if status == 0 {
		return ""
	}
	return strconv.Itoa(status)
}

func compactionText(c Compaction) string {
	what := fmt.Sprintf("%s replaced by a summary (%s)", plural(c.Replaced, "message"), plural(c.SummaryChars, "char"))
	if c.Failed != "" {
		what = "failed, nothing replaced: " + c.Failed
	}
	if c.Step > 0 {
		what += fmt.Sprintf(" for step %d", c.Step)
	}
	return what
}

// then says what followed an attempt: the retry scheduled and how its wait
// went, or for a committed attempt the start of its reply.
func then(s *Step) string {
	if r := s.Retry; r != nil {
		return retryText(r)
	}
	if (s.Outcome == session.OutcomeOK || s.Incomplete) && s.MessageID != "" {
		details := []string{plural(s.ReplyChars, "char")}
		if s.Incomplete {
			details = append(details, "incomplete: what was shown")
		}
		if s.ReasoningChars > 0 {
			details = append(details, fmt.Sprintf("%d reasoning", s.ReasoningChars))
		}
		if s.FinishReason != "" {
			details = append(details, s.FinishReason)
		}
		return quote(s.Reply, 40) + " (" + strings.Join(details, ", ") + ")"
	}
	return ""
}

// retryText says what a retry was and how its wait went.
func retryText(r *Retry) string {
	n := r.Retry
	if r.PolicyRetry > 0 {
		n = r.PolicyRetry // the budget is the policy's
	}
	txt := fmt.Sprintf("retry %d/%d in %s", n, r.MaxRetries, dur(r.DelayMs))
	if r.Policy != "" {
		txt += " (" + r.Policy
		if r.Action != "" && r.Action != r.Policy {
			txt += ": " + r.Action
		}
		txt += ")"
	}
	return txt + waitEnd(r)
}

// waitEnd says how a retry's wait went: " · waited 2s".
func waitEnd(r *Retry) string {
	switch r.Wait {
	case WaitDone:
		return " · waited " + dur(*r.WaitedMs)
	case WaitCancelled:
		return " · cancelled after " + dur(*r.WaitedMs)
	case WaitFailed:
		return " · turn failed after " + dur(*r.WaitedMs)
	case WaitInterrupted:
		return " · interrupted: the process died during the wait"
	case WaitOpen:
		return " · still waiting when the log ends"
	}
	return ""
}

// holdText says what a wait on the shared rate limit was and how it went:
// "held 8s: the provider's rate limit, reached by another chat · waited 8s".
func holdText(r *Retry) string {
	what := "reached by " + recovery.HeldBy(r.HeldBy)
	if r.HoldReason == recovery.HoldPacing {
		what = "nearly used up, as " + recovery.HeldBy(r.HeldBy) + " learnt"
	}
	return "held " + dur(r.DelayMs) + ": the provider's shared rate limit, " + what + waitEnd(r)
}

// notes are the lines under an attempt: why it failed, what it streamed in
// vain, a fallback model, its tool calls.
func notes(s *Step, sessionModel string, switched bool) []string {
	var out []string
	if s.Outcome != session.OutcomeOK {
		out = unfinishedNotes(s)
	}
	if switched {
		out = append(out, fmt.Sprintf("fallback: model %s instead of %s", s.Model, sessionModel))
	}
	if len(s.Tools) > 0 {
		calls := make([]string, len(s.Tools))
		for i, tc := range s.Tools {
			calls[i] = tc.Name + " (" + toolState(tc) + ")"
		}
		out = append(out, "tools: "+strings.Join(calls, ", "))
	}
	return out
}

// unfinishedNotes are the notes of an attempt that did not end ok: its
// failure, and what became of the text it streamed and showed.
func unfinishedNotes(s *Step) []string {
	var out []string
	if f := s.Failure; f != nil {
		n := oneLine(f.Message, messageWidth)
		if f.RetryAfterMs != nil {
			n += " · Retry-After " + dur(*f.RetryAfterMs)
		}
		if how := f.Recognised(); how != "" {
			n += " · recognised by " + how
		}
		out = append(out, n)
	}
	if s.StreamedChars > 0 {
		out = append(out, streamedNote(s))
	}
	if s.ShownChars > 0 && !s.Incomplete {
		out = append(out, plural(s.ShownChars, "char")+" shown live, kept: continued by the next attempt")
	}
	return out
}

// streamedNote says what became of the text an unfinished attempt
// streamed: a continuation keeps it, a retry discards it.
func streamedNote(s *Step) string {
	if s.Retry != nil && s.Retry.Action == "continue" {
		return plural(s.StreamedChars, "char") + " kept: a part of the merged reply"
	}
	return plural(s.StreamedChars, "char") + " streamed, discarded"
}

// toolState is how a tool call ended, after the plan it set and the
// user's answer when one was asked.
func toolState(tc Tool) string {
	st := cmp.Or(tc.Status, "no result")
	if tc.Permission != "" {
		st = strings.ReplaceAll(tc.Permission, "_", " ") + ", " + st
	}
	if tc.Plan != "" {
		st = "plan: " + tc.Plan + ", " + st
	}
	return st
}

func outcomeWord(o Outcome) string {
	switch o.Status {
	case TurnCompleted:
		if o.StopReason != "" {
			return o.StopReason
		}
		return "completed"
	case TurnFailed:
		if o.Error != nil {
			return "failed " + o.Error.Code
		}
	}
	return o.Status
}

// table aligns rows of cells; notes are lines under the previous row,
// indented to its second column, that take no part in the alignment.
type table struct {
	rows  [][]string
	under map[int][]string
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) note(s string) {
	if t.under == nil {
		t.under = map[int][]string{}
	}
	i := len(t.rows) - 1
	t.under[i] = append(t.under[i], s)
}

func (t *table) write(w io.Writer, indent string) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	noteIndent := indent
	if len(widths) > 0 {
		noteIndent += strings.Repeat(" ", widths[0]+2)
	}
	for i, r := range t.rows {
		var b strings.Builder
		b.WriteString(indent)
		for j, c := range r {
			b.WriteString(clean(c))
			if j < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		for _, n := range t.under[i] {
			fmt.Fprintln(w, noteIndent+clean(n))
		}
	}
}

// dur shows milliseconds as seconds with millisecond precision, with
// minutes and hours once they help: "0.500s", "2m05.300s", "1h02m03s".
func dur(msec int64) string {
	neg := ""
	if msec < 0 {
		neg, msec = "-", -msec
	}
	d := time.Duration(msec) * time.Millisecond
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%s%d.%03ds", neg, msec/1000, msec%1000)
	case d < time.Hour:
		return fmt.Sprintf("%s%dm%02d.%03ds", neg, msec/60000, msec/1000%60, msec%1000)
	default:
		return fmt.Sprintf("%s%dh%02dm%02ds", neg, msec/3600000, msec/60000%60, msec/1000%60)
	}
}

func offset(msec int64) string {
	if msec < 0 {
		return dur(msec)
	}
	return "+" + dur(msec)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// quote shows text on one line, quoted and escaped (a reply's newlines and
// control characters must not break the table), cut to n characters.
func quote(s string, n int) string {
	return strconv.Quote(text.ClipChars(s, n))
}

// oneLine flattens whitespace runs so a message stays on its line.
func oneLine(s string, n int) string {
	return text.ClipChars(strings.Join(strings.Fields(s), " "), n)
}

// cleanWriter passes text through clean, line by line: the newlines that lay
// out the page stay.
type cleanWriter struct{ w io.Writer }

func (c cleanWriter) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	for _, l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		out := clean(body)
		if nl {
			out += "\n"
		}
		if _, err := io.WriteString(c.w, out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// clean replaces control and format characters: text from a provider or
// an editor must not move the cursor, recolour the terminal it is printed
// to or reorder the line (a bidi override).
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return '�'
		}
		return r
	}, s)
}

// JSON writes the timeline as indented JSON, the shape of the Timeline type.
func (tl *Timeline) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(tl)
}

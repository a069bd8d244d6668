package inspect

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

//go:embed page.html.tmpl
var pageSource string

// page is parsed once; html/template escapes every value by context, which
// matters because failure messages and prompts come from providers and
// editors and may hold markup.
var page = sync.OnceValue(func() *template.Template { return template.Must(template.New("page").Parse(pageSource)) })

// Geometry of a turn's chart, in SVG user units.
const (
	chartLeft   = 64  // room for the "step n" labels
	chartWidth  = 840 // the time axis
	chartRight  = 24
	rowHeight   = 24
	barHeight   = 14
	chartTop    = 6
	axisSpace   = 30 // below the rows: axis line, ticks and labels
	minBarWidth = 3  // an attempt of zero length must still be seen
)

// The legend lists recovery.Codes in their documented order; the page's CSS
// has a colour for each. A code outside it is drawn as "other".

type pageView struct {
	Title    string
	Header   []string
	Usage    string // the session's usage line; "" when the log has none
	Warnings []string
	Legend   []legendItem
	Turns    []turnView
}

type legendItem struct{ Class, Label string }

type turnView struct {
	ID            string
	Title         string
	Summary       string
	Usage         string // "" when no step recorded usage
	Width, Height int
	Ticks         []tickView
	AxisY, TickY  int
	AxisX1        int
	AxisX2        int
	Rows          []chartRow
	Marks         []markView
	Columns       []string
	Table         []row
}

type chartRow struct {
	Label  string
	LabelY int
	Bar    rect
	Sched  *rect // the wait the retry scheduled
	Wait   *rect // the wait that happened
}

type rect struct {
	X, Y, W, H string
	Class      string
	Title      string
}

type tickView struct {
	X     string
	Label string
}

type markView struct {
	X, Y1, Y2 string
	Class     string
	Title     string
}

// HTML writes one self-contained page (inline CSS and SVG, no script, no
// external asset) drawing each turn on a time axis: every attempt a bar
// from its start to its end, coloured by its failure code, the retry waits
// after it hatched (what happened) over a dashed outline (what was
// scheduled), compactions and the turn's end as marks; tooltips carry the
// details, and a table under each chart says the same in words.
func (tl *Timeline) HTML(w io.Writer) error {
	v := pageView{Title: "rebound inspect · " + tl.Session.ID, Warnings: tl.Warnings}
	s := tl.Session
	v.Header = []string{"session " + s.ID, "cwd " + s.Cwd}
	if s.Model != "" {
		v.Header = append(v.Header, "model "+s.Model)
	}
	if s.AgentVersion != "" {
		v.Header = append(v.Header, "agent "+s.AgentVersion)
	}
	if s.Log != "" {
		v.Header = append(v.Header, "log "+s.Log)
	}
	v.Header = append(v.Header, "started "+s.Start.Format(timeLayout))
	v.Header = append(v.Header, append([]string{plural(tl.Totals.Turns, "turn")}, totals(tl.Totals)...)...)
	if u := tl.Usage; u != nil {
		v.Usage = "usage: " + usageText(u, "context at end ")
	}
	used := map[string]bool{}
	for _, t := range tl.Turns {
		v.Turns = append(v.Turns, chart(t, s.Model, used))
	}
	v.Legend = legend(used)
	return page().Execute(w, v)
}

func chart(t *Turn, sessionModel string, used map[string]bool) turnView {
	tv := turnView{
		ID:      fmt.Sprintf("turn-%d", t.Turn),
		Title:   fmt.Sprintf("turn %d · %s · %s", t.Turn, t.Start.Format(timeLayout), quote(t.Prompt, 80)),
		Summary: turnSummary(t),
		Width:   chartLeft + chartWidth + chartRight,
		Columns: columns,
		Table:   turnRows(t, sessionModel),
	}
	if t.Usage != nil {
		tv.Usage = usageText(t.Usage, "context ")
	}
	// The axis spans everything drawn: the turn, and a scheduled wait that
	// a cancel cut short reaches past its end.
	span := ms(t.End.Sub(t.Start))
	for _, s := range t.Steps {
		span = max(span, s.StartMs+s.DurationMs)
		if r := s.Retry; r != nil {
			span = max(span, r.AtMs+r.DelayMs)
		}
	}
	if span <= 0 {
		span = 1000 // all at one instant (a fake clock): a one-second axis
	}
	x := func(msec int64) float64 { return chartLeft + float64(msec)/float64(span)*chartWidth }
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	width := func(from, to int64) float64 { return math.Max(x(to)-x(from), minBarWidth) }

	for i, s := range t.Steps {
		y := chartTop + i*rowHeight
		barY := y + (rowHeight-barHeight)/2
		class := barClass(s)
		used[class] = true
		if s.Fallback {
			class += " fallback"
			used["fallback"] = true
		}
		cr := chartRow{
			Label:  fmt.Sprintf("step %d", s.Step),
			LabelY: y + rowHeight/2 + 4,
			Bar: rect{X: f(x(s.StartMs)), Y: fmt.Sprint(barY), W: f(width(s.StartMs, s.StartMs+s.DurationMs)),
				H: fmt.Sprint(barHeight), Class: "bar " + class, Title: barTitle(s, sessionModel)},
		}
		if r := s.Retry; r != nil {
			title := then(s)
			cr.Sched = &rect{X: f(x(r.AtMs)), Y: fmt.Sprint(barY), W: f(width(r.AtMs, r.AtMs+r.DelayMs)),
				H: fmt.Sprint(barHeight), Class: "sched", Title: title}
			used["sched"] = true
			if r.WaitedMs != nil {
				cr.Wait = &rect{X: f(x(r.AtMs)), Y: fmt.Sprint(barY + 3), W: f(width(r.AtMs, r.AtMs+*r.WaitedMs)),
					H: fmt.Sprint(barHeight - 6), Class: "wait", Title: title}
				used["wait"] = true
			}
		}
		tv.Rows = append(tv.Rows, cr)
	}
	bottom := chartTop + max(len(t.Steps), 1)*rowHeight
	for _, c := range t.Compactions {
		tv.Marks = append(tv.Marks, markView{X: f(x(c.AtMs)), Y1: fmt.Sprint(chartTop), Y2: fmt.Sprint(bottom),
			Class: "compaction", Title: "compaction at " + offset(c.AtMs) + ": " + compactionText(c)})
		used["compaction"] = true
	}
	endMs := ms(t.End.Sub(t.Start))
	tv.Marks = append(tv.Marks, markView{X: f(x(endMs)), Y1: fmt.Sprint(chartTop), Y2: fmt.Sprint(bottom),
		Class: "end", Title: "end at " + offset(endMs) + ": " + endTitle(t)})
	tv.AxisY, tv.TickY = bottom+4, bottom+8
	tv.AxisX1, tv.AxisX2 = chartLeft, chartLeft+chartWidth
	tv.Height = bottom + axisSpace
	step := tickStep(span)
	for at := int64(0); at <= span; at += step {
		tv.Ticks = append(tv.Ticks, tickView{X: f(x(at)), Label: tickLabel(at)})
	}
	return tv
}

// barClass names an attempt's colour: ok, its failure code, or how it
// ended when it has no failure (cancelled, interrupted, open).
func barClass(s *Step) string {
	switch {
	case s.Outcome == session.OutcomeOK:
		return "c-ok"
	case s.Outcome == session.OutcomeFailed && s.Failure != nil:
		if slices.Contains(recovery.Codes, recovery.Code(s.Failure.Code)) {
			return "c-" + s.Failure.Code
		}
		return "c-other"
	case s.Outcome == session.OutcomeFailed:
		return "c-other"
	}
	return "c-" + s.Outcome // cancelled, interrupted, open
}

func barTitle(s *Step, sessionModel string) string {
	lines := []string{fmt.Sprintf("step %d · %s · %s for %s", s.Step, s.Outcome, offset(s.StartMs), dur(s.DurationMs))}
	if f := s.Failure; f != nil && s.Outcome != session.OutcomeOK {
		l := f.Code
		if f.Status != 0 {
			l += fmt.Sprintf(" %d", f.Status)
		}
		if f.RequestID != "" {
			l += " · request " + f.RequestID
		}
		lines = append(lines, l)
	}
	if s.Model != "" {
		lines = append(lines, "model "+s.Model)
	}
	if t := then(s); t != "" {
		lines = append(lines, t)
	}
	if u := s.Usage; u != nil {
		// The step's own counts; its cost is the session's so far, which
		// the turn's line turns into the turn's, so it is not repeated here.
		l := "context " + contextText(u.Used, u.Size, u.Estimated)
		if !u.Estimated {
			l += fmt.Sprintf(" · prompt %s", tokens(uint64(max(u.PromptTokens, 0))))
			if u.CachedTokens > 0 {
				l += " (" + tokens(uint64(u.CachedTokens)) + " cached)"
			}
			l += " · completion " + tokens(uint64(max(u.CompletionTokens, 0)))
		}
		lines = append(lines, l)
	}
	lines = append(lines, notes(s, sessionModel, s.Fallback)...)
	return strings.Join(lines, "\n")
}

func endTitle(t *Turn) string {
	rows := turnRows(t, "")
	last := rows[len(rows)-1].Cells
	return strings.TrimSpace(last[3] + " " + last[6])
}

// legend lists what the page uses, attempts' colours in taxonomy order.
func legend(used map[string]bool) []legendItem {
	var out []legendItem
	add := func(class, label string) {
		if used[class] {
			out = append(out, legendItem{Class: class, Label: label})
		}
	}
	add("c-ok", "ok")
	for _, c := range recovery.Codes {
		add("c-"+string(c), string(c))
	}
	add("c-other", "other failure")
	add("c-cancelled", "cancelled")
	add("c-interrupted", "interrupted")
	add("c-open", "open")
	add("fallback", "fallback model")
	add("wait", "waited")
	add("sched", "scheduled wait")
	add("compaction", "compaction")
	return out
}

// tickSteps are the axis steps a person reads at a glance.
var tickSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// tickStep picks the smallest readable step (in ms) that cuts span into at
// most ten intervals; past a day, whole days.
func tickStep(span int64) int64 {
	for _, d := range tickSteps {
		if step := d.Milliseconds(); span/step <= 10 {
			return step
		}
	}
	day := (24 * time.Hour).Milliseconds()
	return (span/(10*day) + 1) * day
}

// tickLabel is a short label for an axis tick: "500ms", "1.5s", "2m", "1h30m".
func tickLabel(msec int64) string {
	s := (time.Duration(msec) * time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

package session

import "bytes"

// UsageFill is the session's last recorded usage, which the next request's
// cost goes on from, a load shows again and automatic compaction reads:
// the usage of the last step/end that recorded one, and whether a
// compaction came after it (then its used tokens are of a context that no
// longer exists). It is fed the events one by one, as History is, so it
// follows reloads and other processes' appends without reading the log
// again. The zero value is ready to use.
type UsageFill struct {
	usage *StepUsage
	// raw is the data of the last step/end with usage, added without its
	// decoded data: decoded only when asked, since a load feeds every
	// step/end of the log and asks once.
	raw []byte
	// stale: a compaction came after it.
	stale bool
}

var usageField = []byte(`"usage"`)

// Add takes ev into the figure. data is ev's decoded data (a StepEnd or
// Compaction, or a pointer to one) when the caller has it, else nil (as
// for History.Add).
func (f *UsageFill) Add(ev Event, data any) {
	switch ev.Type {
	case TypeStepEnd:
		f.stepEnd(ev, data)
	case TypeCompaction:
		// A failed compaction replaced nothing: the figure still holds.
		switch d := data.(type) {
		case Compaction:
			f.stale = f.stale || d.Failed == ""
		case *Compaction:
			f.stale = f.stale || d.Failed == ""
		default:
			var c Compaction
			f.stale = f.stale || Unmarshal(ev.Data, &c) != nil || c.Failed == ""
		}
	}
}

func (f *UsageFill) stepEnd(ev Event, data any) {
	var u *StepUsage
	switch d := data.(type) {
	case StepEnd:
		u = d.Usage
	case *StepEnd:
		u = d.Usage
	default:
		if bytes.Contains(ev.Data, usageField) {
			f.raw, f.stale = ev.Data, false
		}
		return
	}
	if u != nil {
		f.usage, f.raw, f.stale = u, nil, false
	}
}

// Last is the last recorded usage; nil when no step recorded one. A
// compaction since does not change it: the session's cost goes on from it.
func (f *UsageFill) Last() *StepUsage {
	if f.raw != nil {
		var d StepEnd
		if Unmarshal(f.raw, &d) == nil && d.Usage != nil {
			f.usage = d.Usage
		}
		f.raw = nil
	}
	return f.usage
}

// Used is the last known tokens in context; known is false when no step
// recorded a usage, or a compaction came after it.
func (f *UsageFill) Used() (used uint64, known bool) {
	if u := f.Last(); u != nil && !f.stale {
		return u.Used, true
	}
	return 0, false
}

// LastUsage is UsageFill of events: the last recorded usage, and whether
// its used tokens still hold (no compaction came after it).
func LastUsage(events []Event) (u *StepUsage, current bool) {
	var f UsageFill
	for _, ev := range events {
		f.Add(ev, nil)
	}
	u = f.Last()
	return u, u != nil && !f.stale
}

package agent

import (
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// liveReply is the emitter's live state: what the editor was shown of the
// current request's reply and of its thoughts, and the trimmers of the
// attempt that continues them. Only what was shown goes in: it is what a
// failed or cancelled request commits, and what a retry continues.
type liveReply struct {
	text, thought         strings.Builder
	resume, resumeThought *resumer
}

// reset starts a new request: nothing shown yet.
func (l *liveReply) reset() {
	l.text.Reset()
	l.thought.Reset()
	l.resume, l.resumeThought = nil, nil
}

// beginAttempt starts an attempt that continues what was shown: its
// repeats of the shown text are trimmed, unless inPlace (the request
// carries the shown text as a prefix the provider continues in place, so
// its reply cannot repeat it).
func (l *liveReply) beginAttempt(inPlace bool) {
	l.resume, l.resumeThought = nil, nil
	if l.text.Len() > 0 && !inPlace {
		l.resume = &resumer{shown: l.text.String()}
	}
	if l.thought.Len() > 0 {
		// A thought is shown once: the retry reasons again from the start
		// (reasoning is never part of the prefix), in place or not.
		l.resumeThought = thoughtResumer(l.thought.String())
	}
}

// trim is what of a chunk's thought and text may be shown now: a retry's
// repeats of what was shown are trimmed, and what may still turn out to
// be one is held back.
func (l *liveReply) trim(thought, text string) (string, string) {
	raw := text
	if l.resume != nil {
		text = l.resume.feed(text)
	}
	if l.resumeThought != nil {
		thought = l.resumeThought.feed(thought)
		if raw != "" {
			// The thoughts are over: what was held back of them goes
			// before the reply.
			thought += l.resumeThought.finish()
		}
	}
	return thought, text
}

// finish is the attempt's stream ending: what the trimmers held back.
func (l *liveReply) finish() (thought, text string) {
	if l.resumeThought != nil {
		thought = l.resumeThought.finish()
	}
	if l.resume != nil {
		text = l.resume.finish()
	}
	return thought, text
}

// add notes text of kind (acp.UpdateAgentThoughtChunk or
// acp.UpdateAgentMessageChunk) as shown.
func (l *liveReply) add(kind, text string) {
	if kind == acp.UpdateAgentThoughtChunk {
		l.thought.WriteString(text)
		return
	}
	l.text.WriteString(text)
}

// any reports whether anything was shown.
func (l *liveReply) any() bool { return l.text.Len() > 0 || l.thought.Len() > 0 }

// reply is what was shown, as a reply's text and reasoning.
func (l *liveReply) reply() (text, reasoning string) { return l.text.String(), l.thought.String() }

// maxOverlapWindow bounds how much of a continuation is held back while
// deciding whether it repeats the end of the shown text.
const maxOverlapWindow = 1 << 10

// resumer trims, from the start of a continuation, what repeats text the
// editor already shows: the model may repeat the end of the shown text, or
// start the reply over from the beginning. Only what is certainly a repeat
// is trimmed (llm.CertainRepeat; llm.CertainRestart for a start over): a
// continuation that merely starts the way the shown text ends (`}`,
// `</div>`, a word) goes on as it came. It holds back the continuation's
// first characters only while they could still be such a repeat.
type resumer struct {
	shown string
	// apart goes before a continuation that repeats none of the shown
	// text: a retry's thought, worded anew, then starts a paragraph of its
	// own instead of running on from the cut one mid-word. Reply text has
	// none, since a continuation of it goes on verbatim.
	apart   string
	pending strings.Builder
	decided bool
}

// thoughtResumer is the resumer of a retry's reasoning against the thoughts
// already shown: a model asked again reasons from the start (reasoning is
// never sent back to it), so a restart or a repeat of the end is trimmed
// and what is new is shown once.
func thoughtResumer(shown string) *resumer {
	r := &resumer{shown: shown}
	if !strings.HasSuffix(shown, "\n") {
		r.apart = "\n\n"
	}
	return r
}

// feed takes the next text of the continuation and returns what may be
// shown now.
func (r *resumer) feed(s string) string {
	if r.decided {
		return s
	}
	r.pending.WriteString(s)
	p := r.pending.String()
	switch {
	case strings.HasPrefix(r.shown, p) && len(p) < len(r.shown):
		return "" // so far a restart from the beginning: nothing new yet
	case !strings.HasPrefix(p, r.shown) && len(p) < maxOverlapWindow && strings.Contains(r.shown, p):
		return "" // may still grow into a repeat of the shown text's end
	}
	return r.decide()
}

// finish is called when the continuation has ended: it decides with what
// came.
func (r *resumer) finish() string {
	if r.decided {
		return ""
	}
	return r.decide()
}

func (r *resumer) decide() string {
	r.decided = true
	p := r.pending.String()
	// The longest passage that ends the shown text and starts p; a restart
	// from the beginning that got past it is the whole shown text. Only the
	// longest is weighed: a shorter one is its prefix, so it is no longer
	// and repeats any unit the longest repeats, and cannot be certain when
	// the longest is not.
	// A passage that is all of the shown text is a restart, anchored at
	// the reply's first character, and weighed as one (llm.CertainRestart).
	for o := min(len(p), len(r.shown)); o > 0; o-- {
		if strings.HasSuffix(r.shown, p[:o]) {
			certain := llm.CertainRepeat
			if o == len(r.shown) {
				certain = llm.CertainRestart
			}
			if certain(p[:o]) {
				return p[o:]
			}
			break
		}
	}
	if len(p) < len(r.shown) && strings.HasPrefix(r.shown, p) && llm.CertainRestart(p) {
		return "" // a restart that stopped short: all of it is shown already
	}
	if p == "" {
		return ""
	}
	return r.apart + p
}

package agent

import (
	"context"
	clip "github.com/rebound-agent/rebound/internal/text"
	"strings"

	"github.com/rebound-agent/rebound/acp"
)

// The emitter keeps the one rule, that the editor never sees text that is
// later thrown away, in one of two ways:
//
//   - held: an attempt's output is kept (as text, not as chunks) until the
//     step commits, then sent in a few large updates;
//   - live: each chunk is recorded, then sent, as it arrives; an attempt that
//     fails after text was shown is continued from that text, and whatever
//     was shown is committed, so nothing shown is ever discarded.

// heldPieceBytes is the most text one held-mode update carries.
const heldPieceBytes = 4 << 10

// segment is a run of output of one kind (message or thought), as it came.
type segment struct {
	kind string // acp.UpdateAgentMessageChunk or acp.UpdateAgentThoughtChunk
	text []byte
}

// output is an attempt's held output: memory in proportion to its text,
// whatever the number of chunks it came in.
type output []segment

func (o *output) add(kind, text string) {
	if text == "" {
		return
	}
	if n := len(*o); n > 0 && (*o)[n-1].kind == kind {
		(*o)[n-1].text = append((*o)[n-1].text, text...)
		return
	}
	*o = append(*o, segment{kind: kind, text: []byte(text)})
}

// send sends held output in order, in pieces of at most heldPieceBytes cut
// at rune boundaries, all under the message's id.
func (o output) send(ctx context.Context, c acp.Client, sessionID, msgID string) error {
	for _, seg := range o {
		for rest := string(seg.text); len(rest) > 0; {
			piece := clip.Prefix(rest, heldPieceBytes)
			if err := sendChunk(ctx, c, sessionID, seg.kind, msgID, piece); err != nil {
				return err
			}
			rest = rest[len(piece):]
		}
	}
	return nil
}

// minOverlap is the shortest repeat of the shown text's end that is trimmed
// anywhere; a shorter one is trimmed only when it is whole words (" fox"
// repeated as "fox jumps"), since a few letters are as likely to be the
// reply going on.
const minOverlap = 8

// maxOverlapWindow bounds how much of a continuation is held back while
// deciding whether it repeats the end of what was shown.
const maxOverlapWindow = 1 << 10

// resumer trims, from the start of a continuation, what repeats text the
// editor already shows: the model may repeat the end of the shown text, or
// start the reply over from the beginning. It holds back the continuation's
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
	if strings.HasPrefix(p, r.shown) {
		return p[len(r.shown):] // restarted from the beginning
	}
	if strings.HasPrefix(r.shown, p) {
		return "" // a restart that stopped short: all of it is shown already
	}
	for o := min(len(p), len(r.shown)); o >= 2; o-- {
		if !strings.HasSuffix(r.shown, p[:o]) {
			continue
		}
		if o >= minOverlap || wordsAt(r.shown, len(r.shown)-o) && (o == len(p) || !isWordByte(p[o])) {
			return p[o:] // repeated the end of the shown text
		}
	}
	if p == "" {
		return ""
	}
	return r.apart + p
}

// wordsAt reports whether s[i:] starts at the beginning of a word.
func wordsAt(s string, i int) bool { return i == 0 || !isWordByte(s[i-1]) }

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b >= 0x80
}

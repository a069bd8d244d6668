package agent

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/acp"
	clip "github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
	"github.com/rs/zerolog"
)

// The emitter is the one place reply text is recorded and then sent. It
// keeps the one rule, that the editor never sees text that is later thrown
// away, in one of two ways:
//
//   - held: an attempt's output is kept (as text, not as chunks) until the
//     reply commits as one message in the log, then sent in a few large
//     updates;
//   - live: each chunk is written to the session's shown journal, then
//     sent, as it arrives; an attempt that fails after text was shown is
//     continued from that text, and whatever was shown is committed, so
//     nothing shown is ever discarded (after a crash too: the journal is
//     what the next process commits).
//
// The turn decides what happens to an attempt (retry, continue, commit);
// the emitter decides what of it the editor sees, and when.
type emitter struct {
	rec     recorder
	journal journal
	c       updater
	session string // the session's id, which every update names
	logger  *zerolog.Logger
	live    bool
	turn    int

	attempt int    // the attempt whose output comes (the log's step number)
	msgID   string // the id of the message the current logical request makes
	// committed: the current request's message is in the log; nothing more
	// is shown under its id.
	committed bool

	// Live: what the editor was shown of the reply and its thoughts, and
	// the trimmers of the attempt continuing them.
	shown, shownThought   strings.Builder
	resume, resumeThought *resumer

	// Held: the current attempt's output, and the kept parts of a reply
	// cut at the output limit that the next attempt continues.
	// Held, and a slash command's answer in either mode: parts are what
	// flush sends once the message is committed.
	held  output
	parts []part

	// The current attempt's characters (text and reasoning): streamed and
	// held back, or shown live. Its step/end records them.
	streamedChars, shownChars int
}

// part is a finished attempt's output, held back until the whole reply is.
type part struct {
	reply *llm.Reply
	out   output
}

// recorder appends the reply's message to the session log, synced: a
// commit is on disk before anything of it is sent.
type recorder interface {
	recordMessage(session.AssistantMessage) error
}

// journal is the session's shown journal: what the editor was shown live
// of a reply not yet committed (session.Log).
type journal interface {
	WriteShown(chunks ...session.AssistantChunk) error
	ClearShown() error
}

// updater sends the editor a session update (acp.Client).
type updater interface {
	Update(ctx context.Context, sessionID string, u acp.SessionUpdate) error
}

func newEmitter(rec recorder, j journal, c updater, sessionID string, logger *zerolog.Logger, live bool, turn int) *emitter {
	return &emitter{rec: rec, journal: j, c: c, session: sessionID, logger: logger, live: live, turn: turn}
}

// sessionRecorder records through the session (sessionState.appendSync),
// so the message joins the session's events too.
type sessionRecorder struct{ s *sessionState }

func (r sessionRecorder) recordMessage(m session.AssistantMessage) error {
	_, err := r.s.appendSync(session.TypeAssistantMessage, m)
	return err
}

// sessionJournal is the session log's shown journal, the log looked up at
// each use, as the session holds it then.
type sessionJournal struct{ s *sessionState }

func (j sessionJournal) WriteShown(chunks ...session.AssistantChunk) error {
	return j.s.log.WriteShown(chunks...)
}

func (j sessionJournal) ClearShown() error { return j.s.log.ClearShown() }

// begin starts the output of a new logical request, under a new message id.
func (e *emitter) begin() {
	e.msgID, e.committed = newID("msg_"), false
	e.shown.Reset()
	e.shownThought.Reset()
	e.resume, e.resumeThought, e.held, e.parts = nil, nil, nil, nil
}

// beginAttempt starts attempt n of the request. Live, a retry continues
// what was shown: its repeats of it are trimmed, unless inPlace (the
// request carries the shown text as a prefix the provider continues in
// place, so its reply cannot repeat it; the adapter drops a documented
// echo of the prefix). Held, the previous attempt's output (a failed
// one's, or a discarded truncated one's) is dropped: nothing of it was
// sent.
func (e *emitter) beginAttempt(n int, inPlace bool) {
	e.attempt, e.held = n, nil
	e.streamedChars, e.shownChars = 0, 0
	e.resume, e.resumeThought = nil, nil
	if e.live && e.shown.Len() > 0 && !inPlace {
		e.resume = &resumer{shown: e.shown.String()}
	}
	if e.live && e.shownThought.Len() > 0 {
		// A thought is shown once: the retry reasons again from the start
		// (reasoning is never part of the prefix), in place or not.
		e.resumeThought = thoughtResumer(e.shownThought.String())
	}
}

// chunk takes a provider chunk's thought and text. Held, they are kept
// (the commit records them, as one message); live, written to the shown
// journal, then sent.
func (e *emitter) chunk(ctx context.Context, thought, text string) error {
	if thought == "" && text == "" {
		return nil
	}
	if !e.live {
		e.held.add(acp.UpdateAgentThoughtChunk, thought)
		e.held.add(acp.UpdateAgentMessageChunk, text)
		e.streamedChars += utf8.RuneCountInString(thought) + utf8.RuneCountInString(text)
		return nil
	}
	raw := text
	if e.resume != nil {
		text = e.resume.feed(text)
	}
	if e.resumeThought != nil {
		thought = e.resumeThought.feed(thought)
		if raw != "" {
			// The thoughts are over: what was held back of them goes
			// before the reply.
			thought += e.resumeThought.finish()
		}
	}
	return e.show(ctx, thought, text)
}

// end is the attempt's stream ending: what the trimmers held back is shown.
func (e *emitter) end(ctx context.Context) error {
	var thought, text string
	if e.resumeThought != nil {
		thought = e.resumeThought.finish()
	}
	if e.resume != nil {
		text = e.resume.finish()
	}
	return e.show(ctx, thought, text)
}

// show writes live thought and text to the session's shown journal with
// one write (no fsync), then sends them: what the editor has is always in
// a file first, so a killed process loses nothing the user saw.
func (e *emitter) show(ctx context.Context, thought, text string) error {
	if thought == "" && text == "" {
		return nil
	}
	parts := [2]struct{ kind, text string }{{acp.UpdateAgentThoughtChunk, thought}, {acp.UpdateAgentMessageChunk, text}}
	var chunks [2]session.AssistantChunk
	n := 0
	for _, p := range parts {
		if p.text == "" {
			continue
		}
		ch := session.AssistantChunk{Turn: e.turn, Step: e.attempt, Shown: true, MessageID: e.msgID}
		if p.kind == acp.UpdateAgentThoughtChunk {
			ch.Reasoning = p.text
			e.shownThought.WriteString(p.text)
		} else {
			ch.Text = p.text
			e.shown.WriteString(p.text)
		}
		e.shownChars += utf8.RuneCountInString(p.text)
		chunks[n] = ch
		n++
	}
	if err := e.journal.WriteShown(chunks[:n]...); err != nil {
		return fmt.Errorf("record chunk: %w", &recordError{err})
	}
	for _, p := range parts {
		if p.text == "" {
			continue
		}
		if err := sendChunk(ctx, e.c, e.session, p.kind, e.msgID, p.text); err != nil {
			// The editor went away; the reply is recorded and goes on.
			e.logger.Debug().Err(err).Str("session", e.session).Msg("could not send a chunk")
		}
	}
	return nil
}

// keep keeps the finished attempt's held output as a part of the reply:
// it was cut at the output limit, and the next attempt continues it. Live,
// what was shown is the part.
func (e *emitter) keep(reply *llm.Reply) {
	if e.live {
		return
	}
	e.parts = append(e.parts, part{reply: reply, out: e.held})
	e.held = nil
}

// shownAny reports whether the editor was shown any of the current
// request's reply (live only: held output is shown at the commit).
func (e *emitter) shownAny() bool { return e.shown.Len() > 0 || e.shownThought.Len() > 0 }

// prefix is the reply so far that the next attempt continues: what was
// shown (live), or the kept parts (held).
func (e *emitter) prefix() string {
	if e.live {
		return e.shown.String()
	}
	var b strings.Builder
	for _, p := range e.parts {
		b.WriteString(p.reply.Content)
	}
	return b.String()
}

// commit records the reply as final: live, what was shown; held, every
// kept part and the last attempt's reply, verbatim. It returns the message
// as the model gets it next. flush then sends held output.
func (e *emitter) commit(last *llm.Reply, calls []session.MessageToolCall) (llm.Message, error) {
	var text, reasoning string
	if e.live {
		text, reasoning = e.shown.String(), e.shownThought.String()
	} else {
		e.keep(last)
		var t, r strings.Builder
		for _, p := range e.parts {
			t.WriteString(p.reply.Content)
			r.WriteString(p.reply.Reasoning)
		}
		text, reasoning = t.String(), r.String()
	}
	if err := e.rec.recordMessage(session.AssistantMessage{
		Turn: e.turn, Step: e.attempt, MessageID: e.msgID, Text: text, Reasoning: reasoning, FinishReason: last.FinishReason,
		ToolCalls: calls,
	}); err != nil {
		return llm.Message{}, fmt.Errorf("commit reply: %w", err)
	}
	e.committed = true
	e.clearShown()
	am := llm.Message{Role: llm.RoleAssistant, Content: text, Reasoning: reasoning}
	for _, c := range calls {
		am.ToolCalls = append(am.ToolCalls, llm.ToolCall{ID: c.ModelID(), Name: c.Name, Arguments: c.Arguments})
	}
	return am, nil
}

// commitIncomplete commits what the editor was shown of a request whose
// recovery failed or was cancelled: the user saw it, so it stays, marked
// incomplete, and the next turn's history holds it. Nothing is sent.
func (e *emitter) commitIncomplete() (llm.Message, error) {
	if err := e.rec.recordMessage(session.AssistantMessage{
		Turn: e.turn, Step: e.attempt, MessageID: e.msgID, Text: e.shown.String(), Reasoning: e.shownThought.String(), Incomplete: true,
	}); err != nil {
		return llm.Message{}, fmt.Errorf("commit the reply shown so far: %w", err)
	}
	e.committed = true
	// Held parts kept before the failure were never shown and are not in
	// the record: a flush must not send them now.
	e.held, e.parts = nil, nil
	e.clearShown()
	return llm.Message{Role: llm.RoleAssistant, Content: e.shown.String(), Reasoning: e.shownThought.String()}, nil
}

// commitAnswer records a reply Rebound made itself (a slash command's
// answer) as the request's message; flush then sends it, live or held.
func (e *emitter) commitAnswer(text string) error {
	if err := e.rec.recordMessage(session.AssistantMessage{
		Turn: e.turn, Step: e.attempt, MessageID: e.msgID, Text: text, FinishReason: llm.FinishStop,
	}); err != nil {
		return err
	}
	e.committed = true
	e.parts = []part{{reply: &llm.Reply{Content: text, FinishReason: llm.FinishStop}, out: output{{kind: acp.UpdateAgentMessageChunk, text: []byte(text)}}}}
	return nil
}

// clearShown empties the shown journal once its reply is committed.
func (e *emitter) clearShown() {
	if !e.live {
		return // held output never reaches the journal
	}
	if err := e.journal.ClearShown(); err != nil {
		// Harmless: its chunks are stale now that the message is in the log.
		e.logger.Warn().Err(err).Str("session", e.session).Msg("could not empty the shown journal")
	}
}

// flush sends the committed reply's parts, in order, once: held output,
// or an answer. Live output went as it came (keep keeps no parts live).
// Nothing uncommitted is ever sent from here.
func (e *emitter) flush(ctx context.Context) error {
	if !e.committed {
		return nil
	}
	parts := e.parts
	e.parts = nil
	for _, p := range parts {
		if err := p.out.send(ctx, e.c, e.session, e.msgID); err != nil {
			return fmt.Errorf("send reply: %w", err)
		}
	}
	return nil
}

func sendChunk(ctx context.Context, c updater, sessionID, kind, msgID, text string) error {
	block := acp.TextBlock(text)
	return c.Update(ctx, sessionID, acp.Chunk(kind, msgID, block))
}

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
func (o output) send(ctx context.Context, c updater, sessionID, msgID string) error {
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

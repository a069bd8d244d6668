package agent

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/acp"
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

	// shown is what the editor was shown live (emitlive.go); held is what
	// is held back until the commit, live or held: a slash command's
	// answer goes out from there in either mode (emitheld.go).
	shown liveReply
	held  heldReply

	// The current attempt's characters (text and reasoning): streamed and
	// held back, or shown live. Its step/end records them.
	streamedChars, shownChars int
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
	e.shown.reset()
	e.held.reset()
}

// beginAttempt starts attempt n of the request. Live, a retry continues
// what was shown: its repeats of it are trimmed, unless inPlace (the
// request carries the shown text as a prefix the provider continues in
// place, so its reply cannot repeat it; the adapter drops a documented
// echo of the prefix). Held, the previous attempt's output (a failed
// one's, or a discarded truncated one's) is dropped: nothing of it was
// sent.
func (e *emitter) beginAttempt(n int, inPlace bool) {
	e.attempt = n
	e.streamedChars, e.shownChars = 0, 0
	e.held.dropAttempt()
	e.shown.beginAttempt(inPlace)
}

// chunk takes a provider chunk's thought and text. Held, they are kept
// (the commit records them, as one message); live, written to the shown
// journal, then sent.
func (e *emitter) chunk(ctx context.Context, thought, text string) error {
	if thought == "" && text == "" {
		return nil
	}
	if !e.live {
		e.held.add(thought, text)
		e.streamedChars += utf8.RuneCountInString(thought) + utf8.RuneCountInString(text)
		return nil
	}
	thought, text = e.shown.trim(thought, text)
	return e.show(ctx, thought, text)
}

// end is the attempt's stream ending: what the trimmers held back is shown.
func (e *emitter) end(ctx context.Context) error {
	thought, text := e.shown.finish()
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
		} else {
			ch.Text = p.text
		}
		e.shown.add(p.kind, p.text)
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
	e.held.keep(reply)
}

// shownAny reports whether the editor was shown any of the current
// request's reply (live only: held output is shown at the commit).
func (e *emitter) shownAny() bool { return e.shown.any() }

// prefix is the reply so far that the next attempt continues: what was
// shown (live), or the kept parts (held).
func (e *emitter) prefix() string {
	if e.live {
		return e.shown.text.String()
	}
	return e.held.prefix()
}

// commit records the reply as final: live, what was shown; held, every
// kept part and the last attempt's reply, verbatim. It returns the message
// as the model gets it next. flush then sends held output.
func (e *emitter) commit(last *llm.Reply, calls []session.MessageToolCall) (llm.Message, error) {
	var text, reasoning string
	if e.live {
		text, reasoning = e.shown.reply()
	} else {
		e.keep(last)
		text, reasoning = e.held.joined()
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
	text, reasoning := e.shown.reply()
	if err := e.rec.recordMessage(session.AssistantMessage{
		Turn: e.turn, Step: e.attempt, MessageID: e.msgID, Text: text, Reasoning: reasoning, Incomplete: true,
	}); err != nil {
		return llm.Message{}, fmt.Errorf("commit the reply shown so far: %w", err)
	}
	e.committed = true
	// Held parts kept before the failure were never shown and are not in
	// the record: a flush must not send them now.
	e.held.reset()
	e.clearShown()
	return llm.Message{Role: llm.RoleAssistant, Content: text, Reasoning: reasoning}, nil
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
	e.held.answer(text)
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
	for _, p := range e.held.take() {
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

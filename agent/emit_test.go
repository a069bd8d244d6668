package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// The emitter alone, against a fake session log and a fake editor: what the
// editor is sent, and what is on "disk" at the moment each update goes.

// fakeLog is the session log as the emitter sees it: the message records
// and the shown journal.
type fakeLog struct {
	ops       []string // "message", "journal", "clear", in order
	messages  []session.AssistantMessage
	journal   []session.AssistantChunk // since the last clear
	recordErr error
	writeErr  error
	clearErr  error
}

func (f *fakeLog) recordMessage(m session.AssistantMessage) error {
	if f.recordErr != nil {
		return f.recordErr
	}
	f.ops = append(f.ops, "message")
	f.messages = append(f.messages, m)
	return nil
}

func (f *fakeLog) WriteShown(chunks ...session.AssistantChunk) error {
	if f.writeErr != nil {
		return f.writeErr
	}
	f.ops = append(f.ops, "journal")
	f.journal = append(f.journal, chunks...)
	return nil
}

func (f *fakeLog) ClearShown() error {
	if f.clearErr != nil {
		return f.clearErr
	}
	f.ops = append(f.ops, "clear")
	f.journal = nil
	return nil
}

// journalText is the journal's text of kind under msgID.
func (f *fakeLog) journalText(kind, msgID string) string {
	var b strings.Builder
	for _, c := range f.journal {
		if c.MessageID != msgID {
			continue
		}
		if kind == acp.UpdateAgentThoughtChunk {
			b.WriteString(c.Reasoning)
		} else {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func (f *fakeLog) recorded(msgID string) bool {
	for _, m := range f.messages {
		if m.MessageID == msgID {
			return true
		}
	}
	return false
}

// sent is one update the editor got, with what the log held as it came.
type sent struct {
	kind, msgID, text string
	journal           string // the journal's text of kind under msgID
	recorded          bool   // the message under msgID was in the log
}

// fakeEditor takes the emitter's updates and notes, for each, what the log
// held at that moment.
type fakeEditor struct {
	log  *fakeLog
	got  []sent
	err  error // every Update fails with it
	seen string
}

func (f *fakeEditor) Update(_ context.Context, sessionID string, u acp.SessionUpdate) error {
	f.seen = sessionID
	f.log.ops = append(f.log.ops, "send")
	f.got = append(f.got, sent{
		kind: u.SessionUpdate, msgID: u.MessageID, text: u.Content.Text,
		journal:  f.log.journalText(u.SessionUpdate, u.MessageID),
		recorded: f.log.recorded(u.MessageID),
	})
	return f.err
}

// text is everything the editor got of kind under msgID, in order.
func (f *fakeEditor) text(kind, msgID string) string {
	var b strings.Builder
	for _, s := range f.got {
		if s.kind == kind && s.msgID == msgID {
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// checkLive fails t unless the editor got each live chunk only once the
// journal held it: at each send, what was sent so far of its kind under
// its id is a prefix of the journal's text of that kind.
func (f *fakeEditor) checkLive(t *testing.T) {
	t.Helper()
	so := map[[2]string]string{}
	for i, s := range f.got {
		k := [2]string{s.kind, s.msgID}
		so[k] += s.text
		if !strings.HasPrefix(s.journal, so[k]) {
			t.Errorf("update %d (%s %q) was sent with the journal holding only %q of the %q sent so far", i, s.kind, s.text, s.journal, so[k])
		}
	}
}

func newTestEmitter(live bool) (*emitter, *fakeLog, *fakeEditor) {
	l := &fakeLog{}
	ed := &fakeEditor{log: l}
	nop := zerolog.Nop()
	return newEmitter(l, l, ed, "sess_1", &nop, live, 3), l, ed
}

func TestEmitter_LiveRecordsEachChunkBeforeSendingIt(t *testing.T) {
	e, l, ed := newTestEmitter(true)
	ctx := t.Context()
	e.begin()
	e.beginAttempt(1, false)
	for _, c := range [][2]string{{"think", ""}, {" more", ""}, {"", "Hel"}, {"", ""}, {"ok", "lo"}, {"", " world"}} {
		if err := e.chunk(ctx, c[0], c[1]); err != nil {
			t.Fatalf("chunk %q: %v", c, err)
		}
	}
	if err := e.end(ctx); err != nil {
		t.Fatal(err)
	}
	ed.checkLive(t)
	if got := ed.text(acp.UpdateAgentMessageChunk, e.msgID); got != "Hello world" {
		t.Errorf("sent %q, want the whole reply", got)
	}
	if got := ed.text(acp.UpdateAgentThoughtChunk, e.msgID); got != "think moreok" {
		t.Errorf("sent thoughts %q", got)
	}
	if ed.seen != "sess_1" {
		t.Errorf("updates named session %q", ed.seen)
	}
	for _, c := range l.journal {
		if c.Turn != 3 || c.Step != 1 || c.MessageID != e.msgID || !c.Shown {
			t.Errorf("journal chunk %+v: want turn 3, step 1, the message's id, shown", c)
		}
	}
	if e.shownChars != utf8.RuneCountInString("think moreokHello world") || e.streamedChars != 0 {
		t.Errorf("shownChars %d, streamedChars %d", e.shownChars, e.streamedChars)
	}
	if len(l.messages) != 0 {
		t.Errorf("a live chunk recorded a message: %+v", l.messages)
	}
}

func TestEmitter_LiveJournalWriteFailureStopsTheSend(t *testing.T) {
	e, l, ed := newTestEmitter(true)
	l.writeErr = errors.New("disk full")
	e.begin()
	e.beginAttempt(1, false)
	err := e.chunk(t.Context(), "why", "text")
	var re *recordError
	if !errors.As(err, &re) || !errors.Is(err, l.writeErr) {
		t.Fatalf("chunk = %v, want a recordError wrapping the write's", err)
	}
	if len(ed.got) != 0 {
		t.Errorf("sent %d updates whose journal write failed", len(ed.got))
	}
}

// An editor that went away does not stop the reply: it is recorded, and
// committed, all the same.
func TestEmitter_LiveSendFailureGoesOn(t *testing.T) {
	e, l, ed := newTestEmitter(true)
	ed.err = errors.New("broken pipe")
	e.begin()
	e.beginAttempt(1, false)
	if err := e.chunk(t.Context(), "", "kept"); err != nil {
		t.Fatalf("chunk = %v, want the reply to go on", err)
	}
	if _, err := e.commit(&llm.Reply{Content: "kept", FinishReason: llm.FinishStop}, nil); err != nil {
		t.Fatal(err)
	}
	if len(l.messages) != 1 || l.messages[0].Text != "kept" {
		t.Errorf("recorded %+v", l.messages)
	}
}

// A live retry continues what was shown: the commit records it once, and
// the editor is never sent the repeat.
func TestEmitter_LiveRetryContinuesWhatWasShown(t *testing.T) {
	e, l, ed := newTestEmitter(true)
	ctx := t.Context()
	e.begin()
	id := e.msgID
	e.beginAttempt(1, false)
	if err := e.chunk(ctx, "", "The answer is forty"); err != nil {
		t.Fatal(err)
	}
	if !e.shownAny() || e.prefix() != "The answer is forty" {
		t.Fatalf("shownAny %v, prefix %q", e.shownAny(), e.prefix())
	}
	e.beginAttempt(2, false)
	for _, s := range []string{"The answer is forty", "-two."} {
		if err := e.chunk(ctx, "", s); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.end(ctx); err != nil {
		t.Fatal(err)
	}
	am, err := e.commit(&llm.Reply{Content: "The answer is forty-two.", FinishReason: llm.FinishStop}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ed.checkLive(t)
	if got := ed.text(acp.UpdateAgentMessageChunk, id); got != "The answer is forty-two." {
		t.Errorf("the editor got %q", got)
	}
	if len(l.messages) != 1 || l.messages[0].Text != "The answer is forty-two." || l.messages[0].Step != 2 || am.Content != l.messages[0].Text {
		t.Errorf("recorded %+v, returned %q", l.messages, am.Content)
	}
}

// Live, the commit records what was shown, then empties the journal; flush
// sends nothing more (it all went as it came).
func TestEmitter_LiveCommitRecordsWhatWasShown(t *testing.T) {
	e, l, ed := newTestEmitter(true)
	ctx := t.Context()
	e.begin()
	e.beginAttempt(1, false)
	if err := e.chunk(ctx, "hm", "shown"); err != nil {
		t.Fatal(err)
	}
	e.keep(&llm.Reply{Content: "ignored live"})
	calls := []session.MessageToolCall{{ID: "call_1", Name: "read", Arguments: `{"path":"a"}`}}
	am, err := e.commit(&llm.Reply{Content: "the provider's own", FinishReason: llm.FinishToolCalls}, calls)
	if err != nil {
		t.Fatal(err)
	}
	want := session.AssistantMessage{Turn: 3, Step: 1, MessageID: e.msgID, Text: "shown", Reasoning: "hm", FinishReason: llm.FinishToolCalls, ToolCalls: calls}
	if len(l.messages) != 1 {
		t.Fatalf("recorded %d messages", len(l.messages))
	}
	if diff := cmp.Diff(want, l.messages[0]); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if am.Content != "shown" || am.Reasoning != "hm" || len(am.ToolCalls) != 1 || am.ToolCalls[0].Name != "read" {
		t.Errorf("returned %+v", am)
	}
	n := len(ed.got)
	if err := e.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ed.got) != n {
		t.Errorf("flush sent %d updates live", len(ed.got)-n)
	}
	if diff := cmp.Diff([]string{"journal", "send", "send", "message", "clear"}, l.ops); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// A journal that cannot be emptied is harmless once the message is in the
// log: the commit stands.
func TestEmitter_ClearFailureKeepsTheCommit(t *testing.T) {
	e, l, _ := newTestEmitter(true)
	l.clearErr = errors.New("read-only")
	e.begin()
	e.beginAttempt(1, false)
	if err := e.chunk(t.Context(), "", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.commit(&llm.Reply{FinishReason: llm.FinishStop}, nil); err != nil || !e.committed {
		t.Fatalf("commit = %v, committed %v", err, e.committed)
	}
}

// Held, nothing is sent before the commit, which records the reply before
// flush sends any of it; then it is all sent, in order, under the
// message's id, in pieces of at most heldPieceBytes cut at rune boundaries.
func TestEmitter_HeldSendsOnlyAfterTheCommit(t *testing.T) {
	e, l, ed := newTestEmitter(false)
	ctx := t.Context()
	e.begin()
	e.beginAttempt(1, false)
	long := strings.Repeat("é", heldPieceBytes) // 2 bytes a rune: two pieces and more
	var text strings.Builder
	for _, c := range [][2]string{{"plan", ""}, {"ned", ""}, {"", "A"}, {"", long}, {"late thought", ""}, {"", "Z"}} {
		if err := e.chunk(ctx, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
		text.WriteString(c[1])
	}
	if err := e.end(ctx); err != nil {
		t.Fatal(err)
	}
	if e.shownAny() || e.prefix() != "" {
		t.Errorf("held: shownAny %v, prefix %q", e.shownAny(), e.prefix())
	}
	if err := e.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ed.got) != 0 || len(l.journal) != 0 {
		t.Fatalf("before the commit: sent %d updates, journal %d chunks", len(ed.got), len(l.journal))
	}
	if _, err := e.commit(&llm.Reply{Content: text.String(), Reasoning: "plannedlate thought", FinishReason: llm.FinishStop}, nil); err != nil {
		t.Fatal(err)
	}
	if len(ed.got) != 0 {
		t.Fatalf("commit sent %d updates", len(ed.got))
	}
	if err := e.flush(ctx); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for i, s := range ed.got {
		if !s.recorded {
			t.Errorf("update %d was sent before its message was recorded", i)
		}
		if s.msgID != e.msgID || len(s.text) > heldPieceBytes || !utf8.ValidString(s.text) {
			t.Errorf("update %d: id %q, %d bytes, valid UTF-8 %v", i, s.msgID, len(s.text), utf8.ValidString(s.text))
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != s.kind {
			kinds = append(kinds, s.kind)
		}
	}
	if diff := cmp.Diff([]string{acp.UpdateAgentThoughtChunk, acp.UpdateAgentMessageChunk, acp.UpdateAgentThoughtChunk, acp.UpdateAgentMessageChunk}, kinds); diff != "" {
		t.Errorf("kinds in order (-want +got):\n%s", diff)
	}
	if got := ed.text(acp.UpdateAgentMessageChunk, e.msgID); got != text.String() {
		t.Errorf("sent %d bytes of text, want %d", len(got), text.Len())
	}
	if e.streamedChars != utf8.RuneCountInString("plannedlate thought")+utf8.RuneCountInString(text.String()) || e.shownChars != 0 {
		t.Errorf("streamedChars %d, shownChars %d", e.streamedChars, e.shownChars)
	}
	n := len(ed.got)
	if err := e.flush(ctx); err != nil || len(ed.got) != n {
		t.Errorf("a second flush: %v, sent %d more", err, len(ed.got)-n)
	}
}

// Held, a failed attempt's output is dropped by the next attempt: none of
// it is ever sent or recorded.
func TestEmitter_HeldFailedAttemptIsNeverSent(t *testing.T) {
	e, l, ed := newTestEmitter(false)
	ctx := t.Context()
	e.begin()
	e.beginAttempt(1, false)
	if err := e.chunk(ctx, "doomed thought", "doomed"); err != nil {
		t.Fatal(err)
	}
	e.beginAttempt(2, false)
	if err := e.chunk(ctx, "", "fine"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.commit(&llm.Reply{Content: "fine", FinishReason: llm.FinishStop}, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range ed.got {
		if strings.Contains(s.text, "doomed") {
			t.Errorf("the failed attempt's %q was sent", s.text)
		}
	}
	if ed.text(acp.UpdateAgentMessageChunk, e.msgID) != "fine" || len(l.messages) != 1 || l.messages[0].Text != "fine" || l.messages[0].Step != 2 {
		t.Errorf("sent %+v, recorded %+v", ed.got, l.messages)
	}
}

// Held, keep keeps a cut attempt's output as a part the next continues:
// the prefix is the kept parts, the commit records every part verbatim,
// and flush sends them in order.
func TestEmitter_HeldKeepJoinsTheParts(t *testing.T) {
	e, l, ed := newTestEmitter(false)
	ctx := t.Context()
	e.begin()
	e.beginAttempt(1, false)
	if err := e.chunk(ctx, "r1", "part one, "); err != nil {
		t.Fatal(err)
	}
	e.keep(&llm.Reply{Content: "part one, ", Reasoning: "r1", FinishReason: llm.FinishLength})
	if e.prefix() != "part one, " {
		t.Errorf("prefix %q", e.prefix())
	}
	e.beginAttempt(2, true)
	if err := e.chunk(ctx, "r2", "part two"); err != nil {
		t.Fatal(err)
	}
	if len(ed.got) != 0 {
		t.Fatalf("kept parts were sent before the commit")
	}
	am, err := e.commit(&llm.Reply{Content: "part two", Reasoning: "r2", FinishReason: llm.FinishStop}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.messages) != 1 || l.messages[0].Text != "part one, part two" || l.messages[0].Reasoning != "r1r2" || l.messages[0].FinishReason != llm.FinishStop {
		t.Errorf("recorded %+v", l.messages)
	}
	if am.Content != "part one, part two" {
		t.Errorf("returned %q", am.Content)
	}
	if err := e.flush(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ed.got {
		got = append(got, s.text)
	}
	if diff := cmp.Diff([]string{"r1", "part one, ", "r2", "part two"}, got); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}

// A commit the log refuses leaves the reply uncommitted: flush sends
// nothing of it, and the live journal keeps what was shown for the next
// process to commit.
func TestEmitter_FailedCommitSendsNothing(t *testing.T) {
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprint("live=", live), func(t *testing.T) {
			e, l, ed := newTestEmitter(live)
			ctx := t.Context()
			l.recordErr = errors.New("disk full")
			e.begin()
			e.beginAttempt(1, false)
			if err := e.chunk(ctx, "", "text"); err != nil {
				t.Fatal(err)
			}
			n := len(ed.got)
			if _, err := e.commit(&llm.Reply{Content: "text", FinishReason: llm.FinishStop}, nil); !errors.Is(err, l.recordErr) {
				t.Fatalf("commit = %v", err)
			}
			if err := e.commitAnswer("answer"); !errors.Is(err, l.recordErr) {
				t.Fatalf("commitAnswer = %v", err)
			}
			if _, err := e.commitIncomplete(); !errors.Is(err, l.recordErr) {
				t.Fatalf("commitIncomplete = %v", err)
			}
			if err := e.flush(ctx); err != nil {
				t.Fatal(err)
			}
			if e.committed || len(ed.got) != n {
				t.Errorf("committed %v; flush sent %d updates", e.committed, len(ed.got)-n)
			}
			if live && l.journalText(acp.UpdateAgentMessageChunk, e.msgID) != "text" {
				t.Errorf("the journal lost what was shown: %+v", l.journal)
			}
		})
	}
}

// commitIncomplete commits what was shown, marked incomplete, and sends
// nothing; held, nothing was shown, so the record is empty.
func TestEmitter_CommitIncomplete(t *testing.T) {
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprint("live=", live), func(t *testing.T) {
			e, l, ed := newTestEmitter(live)
			ctx := t.Context()
			e.begin()
			e.beginAttempt(1, false)
			if err := e.chunk(ctx, "th", "half a rep"); err != nil {
				t.Fatal(err)
			}
			// Held, a kept part was never shown: it is neither recorded
			// nor sent.
			e.keep(&llm.Reply{Content: "half a rep", Reasoning: "th", FinishReason: llm.FinishLength})
			e.beginAttempt(2, true)
			n := len(ed.got)
			am, err := e.commitIncomplete()
			if err != nil {
				t.Fatal(err)
			}
			if err := e.flush(ctx); err != nil {
				t.Fatal(err)
			}
			want := session.AssistantMessage{Turn: 3, Step: 2, MessageID: e.msgID, Incomplete: true}
			if live {
				want.Text, want.Reasoning = "half a rep", "th"
			}
			if len(l.messages) != 1 {
				t.Fatalf("recorded %d messages", len(l.messages))
			}
			if diff := cmp.Diff(want, l.messages[0]); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if am.Content != want.Text || am.Reasoning != want.Reasoning || am.Role != llm.RoleAssistant {
				t.Errorf("returned %+v", am)
			}
			if len(ed.got) != n {
				t.Errorf("sent %d updates", len(ed.got)-n)
			}
			if live && len(l.journal) != 0 {
				t.Errorf("the journal was not emptied: %+v", l.journal)
			}
		})
	}
}

// commitAnswer records Rebound's own answer; flush then sends it, once,
// live or held, after the record.
func TestEmitter_CommitAnswer(t *testing.T) {
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprint("live=", live), func(t *testing.T) {
			e, l, ed := newTestEmitter(live)
			ctx := t.Context()
			e.begin()
			e.beginAttempt(1, false)
			if err := e.commitAnswer("Model: m"); err != nil {
				t.Fatal(err)
			}
			if len(ed.got) != 0 {
				t.Fatalf("commitAnswer sent %d updates", len(ed.got))
			}
			want := session.AssistantMessage{Turn: 3, Step: 1, MessageID: e.msgID, Text: "Model: m", FinishReason: llm.FinishStop}
			if len(l.messages) != 1 || !cmp.Equal(want, l.messages[0]) {
				t.Errorf("recorded %+v", l.messages)
			}
			for range 2 {
				if err := e.flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if len(ed.got) != 1 || ed.got[0].text != "Model: m" || ed.got[0].kind != acp.UpdateAgentMessageChunk || !ed.got[0].recorded {
				t.Errorf("sent %+v", ed.got)
			}
		})
	}
}

// A failed flush is reported.
func TestEmitter_FlushReportsASendFailure(t *testing.T) {
	e, _, ed := newTestEmitter(false)
	ed.err = errors.New("gone")
	e.begin()
	e.beginAttempt(1, false)
	if err := e.chunk(t.Context(), "", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.commit(&llm.Reply{Content: "x", FinishReason: llm.FinishStop}, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.flush(t.Context()); !errors.Is(err, ed.err) {
		t.Errorf("flush = %v, want the send's error", err)
	}
}

// TestEmitter_Property drives the emitter through random requests,
// attempts, chunks, keeps, commits and flushes, live and held, and checks
// the one rule at every update: live, the journal already holds what is
// sent; held, the message is already recorded; and no request's text is
// sent that its record does not hold.
func TestEmitter_Property(t *testing.T) {
	words := []string{"a", "é", "b c", "\n", "😀", "xyz"}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 30))
		live := seed%2 == 1
		e, l, ed := newTestEmitter(live)
		ctx := t.Context()
		var heldText, heldReason strings.Builder // the current attempt's, held
		attempt, chunked := 0, false
		committed := map[string]bool{}
		e.begin()
		for range 40 {
			switch op := r.IntN(10); {
			case op < 5:
				if attempt == 0 || e.committed {
					continue
				}
				var th, tx string
				if r.IntN(2) == 0 {
					th = words[r.IntN(len(words))]
				}
				if r.IntN(2) == 0 {
					tx = words[r.IntN(len(words))]
				}
				if err := e.chunk(ctx, th, tx); err != nil {
					t.Fatalf("seed %d: chunk: %v", seed, err)
				}
				heldReason.WriteString(th)
				heldText.WriteString(tx)
				chunked = true
			case op == 5: // a new attempt: the last failed, or was cut
				if attempt > 0 && !e.committed && r.IntN(2) == 0 {
					e.keep(&llm.Reply{Content: heldText.String(), Reasoning: heldReason.String(), FinishReason: llm.FinishLength})
				}
				attempt++
				heldText.Reset()
				heldReason.Reset()
				if !e.committed {
					e.beginAttempt(attempt, r.IntN(2) == 0)
				}
			case op == 6: // the stream ends, before its reply commits
				if e.committed {
					continue
				}
				if err := e.end(ctx); err != nil {
					t.Fatalf("seed %d: end: %v", seed, err)
				}
			case op == 7:
				if attempt == 0 || e.committed {
					continue
				}
				var err error
				k := r.IntN(3)
				if k == 2 && chunked {
					k = 0 // an answer is Rebound's own: no model output before it
				}
				switch k {
				case 0:
					_, err = e.commit(&llm.Reply{Content: heldText.String(), Reasoning: heldReason.String(), FinishReason: llm.FinishStop}, nil)
				case 1:
					_, err = e.commitIncomplete()
				case 2:
					err = e.commitAnswer("answer")
				}
				if err != nil {
					t.Fatalf("seed %d: commit: %v", seed, err)
				}
				committed[e.msgID] = true
			case op == 8:
				if err := e.flush(ctx); err != nil {
					t.Fatalf("seed %d: flush: %v", seed, err)
				}
			case op == 9: // the next logical request
				e.begin()
				attempt, chunked = 0, false
				heldText.Reset()
				heldReason.Reset()
			}
		}
		so := map[[2]string]string{}
		for i, s := range ed.got {
			k := [2]string{s.kind, s.msgID}
			so[k] += s.text
			if live && !s.recorded && !strings.HasPrefix(s.journal, so[k]) {
				t.Fatalf("seed %d: live update %d %q sent before the journal held it (journal %q)", seed, i, s.text, s.journal)
			}
			if !live && !s.recorded {
				t.Fatalf("seed %d: held update %d %q sent before its message was recorded", seed, i, s.text)
			}
		}
		for _, m := range l.messages {
			if !committed[m.MessageID] {
				t.Fatalf("seed %d: a message recorded outside a commit: %+v", seed, m)
			}
			text, reasoning := so[[2]string{acp.UpdateAgentMessageChunk, m.MessageID}], so[[2]string{acp.UpdateAgentThoughtChunk, m.MessageID}]
			// Sent is all of the record (held: once flushed), never more.
			if !strings.HasPrefix(m.Text, text) || !strings.HasPrefix(m.Reasoning, reasoning) {
				t.Fatalf("seed %d: sent %q / %q under %s, recorded %q / %q", seed, text, reasoning, m.MessageID, m.Text, m.Reasoning)
			}
		}
		for k, v := range so {
			if !committed[k[1]] && !live {
				t.Fatalf("seed %d: held text %q of an uncommitted request was sent", seed, v)
			}
		}
	}
}

//go:build unix

package agent_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// #29 item 9: a FIFO named like a log in sessions/ blocked session/list in
// open(2) with the index's lock held; from then on no list, session/new or
// prompt of any session was answered, on every start. Now it is no session,
// and everything else goes on, in this process and the next.
func TestAgent_FIFONamedLikeALogCostsNothing(t *testing.T) {
	dir := t.TempDir()
	a := newAgent(t, dir, okProvider())
	id := mustNew(t, a, "/p")
	mustPrompt(t, a, id, "before")
	fifo := session.Path(dir, "sess_fifo")
	testkit.Mkfifo(t, fifo)
	for start := range 2 { // this process, then a new start
		if start == 1 {
			a.Close()
			a = newAgent(t, dir, okProvider())
		}
		var list acp.ListSessionsResponse
		err := testkit.Returns(t, "session/list", func() (err error) {
			list, err = a.ListSessions(t.Context(), acp.ListSessionsRequest{})
			return err
		}, fifo)
		// The first session, and the one each start before this made.
		if err != nil || len(list.Sessions) != 1+start || !slices.ContainsFunc(list.Sessions, func(s acp.SessionInfo) bool { return s.SessionID == id }) {
			t.Fatalf("start %d: session/list = %+v, %v; want %d sessions, the FIFO not one", start, list, err, 1+start)
		}
		err = testkit.Returns(t, "session/new and a prompt", func() error {
			s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
			if err != nil {
				return err
			}
			_, err = a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("hi")}, &recorder{})
			return err
		}, fifo)
		if err != nil {
			t.Fatalf("start %d: a new session's prompt: %v", start, err)
		}
		err = testkit.Returns(t, "session/prompt", func() error {
			if start == 1 {
				if _, err := a.ResumeSession(t.Context(), acp.ResumeSessionRequest{SessionID: id, Cwd: "/p"}); err != nil {
					return err
				}
			}
			_, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: prompt("again")}, &recorder{})
			return err
		}, fifo)
		if err != nil {
			t.Fatalf("start %d: a prompt of the listed session: %v", start, err)
		}
	}
}

// #29 item 11: a process died while showing a reply; its journal has a
// chunk copied in from another session (the same turn and step, another
// message) among its own. Loading commits the session's own shown text,
// under its own message id, and nothing of the other session's; a journal
// wholly another session's commits nothing.
func TestAgent_ForeignJournalIsNotCommitted(t *testing.T) {
	for _, tt := range []struct {
		name    string
		journal []session.ShownChunk
		want    string // the incomplete reply committed, "" for none
	}{
		{"mixed with its own", []session.ShownChunk{foreign("Their secret "), own("Half a "), foreign("plan. "), own("reply")}, "Half a reply"},
		{"copied from another session", []session.ShownChunk{foreign("Their secret "), foreign("plan. ")}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := session.Create(dir, "sess_a", session.SessionStart{SessionID: "sess_a", Cwd: "/p"})
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: json.RawMessage(`[{"type":"text","text":"hi"}]`), Text: "hi"})
			mustAppend(t, l, session.TypeStepStart, session.StepStart{Turn: 1, Step: 1, MessageID: "msg_own"})
			l.Close()
			var b strings.Builder
			for _, c := range tt.journal {
				line, _ := json.Marshal(c)
				b.Write(append(line, '\n'))
			}
			if err := os.WriteFile(session.ShownPath(l.Path()), []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}

			a := newAgent(t, dir, &fakeProvider{chunks: []llm.Chunk{{Content: "ok"}, {FinishReason: "stop"}}})
			rec := &recorder{}
			if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: "sess_a", Cwd: "/p"}, rec); err != nil {
				t.Fatalf("LoadSession: %v", err)
			}
			ld, err := session.Load(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			var got []session.AssistantMessage
			for _, ev := range ld.Events {
				if ev.Type == session.TypeAssistantMessage {
					var m session.AssistantMessage
					if err := json.Unmarshal(ev.Data, &m); err != nil {
						t.Fatal(err)
					}
					got = append(got, m)
				}
			}
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("committed %+v, want nothing", got)
			case tt.want != "" && (len(got) != 1 || got[0].Text != tt.want || got[0].MessageID != "msg_own" || !got[0].Incomplete):
				t.Errorf("committed %+v, want %q under msg_own, incomplete", got, tt.want)
			}
			if replay := strings.Join(rec.texts(), "|"); strings.Contains(replay, "Their") {
				t.Errorf("the replay shows another session's text: %s", replay)
			}
		})
	}
}

func own(text string) session.ShownChunk {
	return session.ShownChunk{SessionID: "sess_a", AssistantChunk: session.AssistantChunk{Turn: 1, Step: 1, MessageID: "msg_own", Text: text, Shown: true}}
}

func foreign(text string) session.ShownChunk {
	return session.ShownChunk{SessionID: "sess_b", AssistantChunk: session.AssistantChunk{Turn: 1, Step: 1, MessageID: "msg_theirs", Text: text, Shown: true}}
}

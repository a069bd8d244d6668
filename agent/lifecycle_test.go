package agent_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

func okProvider() *fakeProvider {
	return &fakeProvider{chunks: []llm.Chunk{{Content: "ok"}, {FinishReason: "stop"}}}
}

func mustNew(t *testing.T, a *agent.Agent, cwd string) string {
	t.Helper()
	s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	return s.SessionID
}

func mustPrompt(t *testing.T, a *agent.Agent, id, text string) *recorder {
	t.Helper()
	rec := &recorder{}
	if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: prompt(text)}, rec); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	return rec
}

func mustListSessions(t *testing.T, a *agent.Agent, req acp.ListSessionsRequest) acp.ListSessionsResponse {
	t.Helper()
	resp, err := a.ListSessions(t.Context(), req)
	if err != nil {
		t.Fatalf("ListSessions(%+v): %v", req, err)
	}
	return resp
}

func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != code {
		t.Errorf("%s = %v, want error %d", what, err, code)
	}
}

// The first turn's end gives the session its title, from the first line of
// the first prompt, recorded in the log and sent once; the list shows it.
func TestAgent_TitleAfterFirstTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		a := newAgent(t, dir, okProvider())
		id := mustNew(t, a, "/p")
		time.Sleep(2 * time.Second)
		rec := mustPrompt(t, a, id, "Why does the retry test time out on CI about once a week, and how do we fix it?\nDetails follow.")
		const title = "Why does the retry test time out on CI about once a week…"
		var infos []acp.SessionUpdate
		for _, u := range rec.updates {
			if u.SessionUpdate == acp.UpdateSessionInfo {
				infos = append(infos, u)
			}
		}
		want := []acp.SessionUpdate{acp.SessionInfoUpdate(title, "2000-01-01T00:00:02.000Z")}
		if diff := cmp.Diff(want, infos); diff != "" {
			t.Errorf("session_info_update (-want +got):\n%s", diff)
		}
		// The last update before the reply: the turn is over.
		if last := rec.updates[len(rec.updates)-1]; last.SessionUpdate != acp.UpdateSessionInfo {
			t.Errorf("last update %s, want the title", last.SessionUpdate)
		}
		time.Sleep(time.Second)
		for _, u := range mustPrompt(t, a, id, "And another thing").updates {
			if u.SessionUpdate == acp.UpdateSessionInfo {
				t.Errorf("the second turn sent a session_info_update: %+v", u)
			}
		}
		got := mustListSessions(t, a, acp.ListSessionsRequest{})
		wantList := acp.ListSessionsResponse{Sessions: []acp.SessionInfo{{SessionID: id, Cwd: "/p", Title: title, UpdatedAt: "2000-01-01T00:00:03.000Z"}}}
		if diff := cmp.Diff(wantList, got); diff != "" {
			t.Errorf("list (-want +got):\n%s", diff)
		}
		a.Close()
		ld, err := session.Load(session.Path(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		if sum, titled := session.Summarize(ld.Events); !titled || sum.Title != title {
			t.Errorf("the log's title is %q (recorded %v), want %q", sum.Title, titled, title)
		}
	})
}

// Newest first, filtered by cwd, in pages whose cursors survive sessions
// being added meanwhile; and the same after a restart, from the index.
func TestAgent_ListSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		a := newAgent(t, dir, okProvider())
		var ids []string // oldest first
		for i, cwd := range []string{"/p", "/q", "/p", "/p", "/q"} {
			time.Sleep(time.Second)
			ids = append(ids, mustNew(t, a, cwd))
			mustPrompt(t, a, ids[i], fmt.Sprintf("session %d", i)) // a session without a turn is not listed
			if i == 1 {
				time.Sleep(time.Second)
				mustPrompt(t, a, ids[1], "second, active again") // still older than ids[2]
			}
		}
		sessionIDs := func(r acp.ListSessionsResponse) []string {
			var out []string
			for _, s := range r.Sessions {
				out = append(out, s.SessionID)
			}
			return out
		}
		all := mustListSessions(t, a, acp.ListSessionsRequest{})
		if diff := cmp.Diff([]string{ids[4], ids[3], ids[2], ids[1], ids[0]}, sessionIDs(all)); diff != "" || all.NextCursor != "" {
			t.Errorf("all (next %q) (-want +got):\n%s", all.NextCursor, diff)
		}
		if all.Sessions[3].Title != "session 1" { // the first prompt names it
			t.Errorf("titles: %+v", all.Sessions)
		}

		// Pages of two in /p: three sessions.
		page := acp.Meta{agent.PageSizeMetaKey: float64(2)}
		p1 := mustListSessions(t, a, acp.ListSessionsRequest{Cwd: "/p/", Meta: page})
		if diff := cmp.Diff([]string{ids[3], ids[2]}, sessionIDs(p1)); diff != "" || p1.NextCursor == "" {
			t.Fatalf("page 1 (next %q) (-want +got):\n%s", p1.NextCursor, diff)
		}
		// A session made between pages is newer than the cursor: the next
		// page neither repeats nor skips.
		time.Sleep(time.Second)
		mustNew(t, a, "/p")
		p2 := mustListSessions(t, a, acp.ListSessionsRequest{Cwd: "/p", Cursor: p1.NextCursor, Meta: page})
		if diff := cmp.Diff([]string{ids[0]}, sessionIDs(p2)); diff != "" || p2.NextCursor != "" {
			t.Errorf("page 2 (next %q) (-want +got):\n%s", p2.NextCursor, diff)
		}
		if got := mustListSessions(t, a, acp.ListSessionsRequest{Cwd: "/elsewhere"}); len(got.Sessions) != 0 {
			t.Errorf("list of an unused cwd = %+v, want none", got)
		}

		for _, bad := range []acp.ListSessionsRequest{
			{Cursor: "nonsense"},
			{Cursor: "2000-01-01T00:00:03Z/../x"},
			{Cursor: "yesterday/sess_1"},
			{Meta: acp.Meta{agent.PageSizeMetaKey: float64(0)}},
			{Meta: acp.Meta{agent.PageSizeMetaKey: "2"}},
			{Meta: acp.Meta{agent.PageSizeMetaKey: float64(agent.ListPageSize + 1)}},
		} {
			_, err := a.ListSessions(t.Context(), bad)
			wantCode(t, "ListSessions with a bad cursor or page size", err, acp.CodeInvalidParams)
		}

		// Another process (or this one after a restart) lists the same,
		// from the index; without it, from the logs.
		want := mustListSessions(t, a, acp.ListSessionsRequest{})
		a.Close()
		if diff := cmp.Diff(want, mustListSessions(t, newAgent(t, dir, okProvider()), acp.ListSessionsRequest{})); diff != "" {
			t.Errorf("after a restart (-want +got):\n%s", diff)
		}
		if err := os.Remove(session.IndexPath(dir)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, mustListSessions(t, newAgent(t, dir, okProvider()), acp.ListSessionsRequest{})); diff != "" {
			t.Errorf("rebuilt from the logs (-want +got):\n%s", diff)
		}
	})
}

// session/resume opens a session again without replaying it: the next
// prompt has the history.
func TestAgent_ResumeSession(t *testing.T) {
	dir := t.TempDir()
	a := newAgent(t, dir, okProvider())
	id := mustNew(t, a, "/p")
	mustPrompt(t, a, id, "first")
	a.Close()

	p := okProvider()
	b := newAgent(t, dir, p)
	if _, err := b.ResumeSession(t.Context(), acp.ResumeSessionRequest{SessionID: id, Cwd: "/p"}); err != nil {
		t.Fatalf("ResumeSession: %v", err)
	}
	mustPrompt(t, b, id, "second")
	want := []llm.Message{{Role: llm.RoleUser, Content: "first"}, {Role: llm.RoleAssistant, Content: "ok"}, {Role: llm.RoleUser, Content: "second"}}
	if diff := cmp.Diff(want, p.requests[0].Messages[1:]); diff != "" {
		t.Errorf("history after resume (-want +got):\n%s", diff)
	}
	_, err := b.ResumeSession(t.Context(), acp.ResumeSessionRequest{SessionID: "sess_none", Cwd: "/p"})
	wantCode(t, "ResumeSession of an unknown session", err, acp.CodeResourceNotFound)
}

// session/close lets go of the log and its lock: another process can open
// it, and this one needs a load or resume to use it again.
func TestAgent_CloseSession(t *testing.T) {
	dir := t.TempDir()
	a := newAgent(t, dir, okProvider())
	id := mustNew(t, a, "/p")
	mustPrompt(t, a, id, "hi")
	if _, err := a.CloseSession(t.Context(), acp.CloseSessionRequest{SessionID: id}); err != nil {
		t.Fatalf("CloseSession: %v", err)
	}
	l, _, err := session.Open(dir, id) // as another process would
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	l.Close()
	_, err = a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: prompt("still there?")}, &recorder{})
	wantCode(t, "Prompt after close", err, acp.CodeResourceNotFound)
	// Closing again: nothing held, the session exists.
	if _, err := a.CloseSession(t.Context(), acp.CloseSessionRequest{SessionID: id}); err != nil {
		t.Errorf("CloseSession of a closed session: %v", err)
	}
	if _, err := a.ResumeSession(t.Context(), acp.ResumeSessionRequest{SessionID: id, Cwd: "/p"}); err != nil {
		t.Fatalf("ResumeSession after close: %v", err)
	}
	mustPrompt(t, a, id, "back")
	_, err = a.CloseSession(t.Context(), acp.CloseSessionRequest{SessionID: "sess_none"})
	wantCode(t, "CloseSession of an unknown session", err, acp.CodeResourceNotFound)
}

// session/delete removes the log and the session from the list; a session
// another process holds is not deleted.
func TestAgent_DeleteSession(t *testing.T) {
	dir := t.TempDir()
	a := newAgent(t, dir, okProvider())
	keep := mustNew(t, a, "/p")
	mustPrompt(t, a, keep, "keep me")
	id := mustNew(t, a, "/p")
	mustPrompt(t, a, id, "hi")
	if _, err := a.DeleteSession(t.Context(), acp.DeleteSessionRequest{SessionID: id}); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if _, err := os.Stat(session.Path(dir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the log is still on disk: %v", err)
	}
	got := mustListSessions(t, a, acp.ListSessionsRequest{})
	if len(got.Sessions) != 1 || got.Sessions[0].SessionID != keep {
		t.Errorf("list after delete = %+v, want only %s", got.Sessions, keep)
	}
	_, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, &recorder{})
	wantCode(t, "LoadSession after delete", err, acp.CodeResourceNotFound)
	_, err = a.DeleteSession(t.Context(), acp.DeleteSessionRequest{SessionID: id})
	wantCode(t, "DeleteSession again", err, acp.CodeResourceNotFound)

	// Held by another process: refused, and still there.
	a.CloseSession(t.Context(), acp.CloseSessionRequest{SessionID: keep})
	l, _, err := session.Open(dir, keep)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = a.DeleteSession(t.Context(), acp.DeleteSessionRequest{SessionID: keep})
	wantCode(t, "DeleteSession of a session open elsewhere", err, acp.CodeSessionBusy)
	if _, err := os.Stat(session.Path(dir, keep)); err != nil {
		t.Errorf("the refused delete removed the log: %v", err)
	}
}

// A chat opened and closed, or the one the editor has open now, has no
// turn: it is not listed as a raw id. A first prompt with no words to make
// a title from still gets one.
func TestAgent_ListSessionsSkipsSessionsWithoutATurn(t *testing.T) {
	a := newAgent(t, t.TempDir(), okProvider())
	empty := mustNew(t, a, "/p")
	pictured := mustNew(t, a, "/p")
	img := acp.ContentBlock{Type: "image", MimeType: "image/png", Data: "iVBORw0KGgo="}
	if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: pictured, Prompt: []acp.ContentBlock{img}}, &recorder{}); err != nil {
		t.Fatal(err)
	}
	got := mustListSessions(t, a, acp.ListSessionsRequest{})
	if len(got.Sessions) != 1 || got.Sessions[0].SessionID != pictured || got.Sessions[0].Title == "" {
		t.Errorf("list = %+v; want only %s, titled (not %s, which has no turn)", got.Sessions, pictured, empty)
	}
}

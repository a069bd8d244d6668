package agent

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// A fork whose opening fails (the agent shut down meanwhile, its log
// unreadable now, ...) leaves nothing behind, as a session/new that fails
// does: no log, no index entry, nothing listed, nothing held, whether it
// failed before the store opened it or after (its summary indexed by a
// list meanwhile).
func TestFork_FailedOpenLeavesNothing(t *testing.T) {
	for _, opened := range []bool{false, true} {
		t.Run(map[bool]string{false: "before", true: "after the store opened it"}[opened], func(t *testing.T) {
			dir := t.TempDir()
			a := testAgent(t, Config{StateDir: dir, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}})
			parent := newSession(t, a)
			if _, err := ask(t.Context(), a, parent, "hi"); err != nil {
				t.Fatal(err)
			}
			resume := a.forker.resume
			a.forker.resume = func(req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
				if opened {
					if _, err := resume(req); err != nil {
						t.Fatal(err)
					}
					if res, err := a.ListSessions(t.Context(), acp.ListSessionsRequest{}); err != nil || len(res.Sessions) != 2 {
						t.Fatalf("the fork opened is not listed: %+v, %v", res.Sessions, err)
					}
				}
				return acp.ResumeSessionResponse{}, errors.New("resume failed")
			}
			if _, err := a.ForkSession(t.Context(), acp.ForkSessionRequest{SessionID: parent, Cwd: t.TempDir()}); err == nil {
				t.Fatal("the fork succeeded")
			}
			logs, err := filepath.Glob(session.Path(dir, "*"))
			if err != nil || !slices.Equal(logs, []string{session.Path(dir, parent)}) {
				t.Errorf("logs %v (%v), want the parent's alone", logs, err)
			}
			res, err := a.ListSessions(t.Context(), acp.ListSessionsRequest{})
			if err != nil || len(res.Sessions) != 1 || res.Sessions[0].SessionID != parent {
				t.Errorf("session/list: %+v (%v), want the parent alone", res.Sessions, err)
			}
			sums, err := a.store.index.List()
			if err != nil || len(sums) != 1 || sums[0].SessionID != parent {
				t.Errorf("the index holds %+v (%v), want the parent alone", sums, err)
			}
			a.store.mu.Lock()
			held := len(a.store.sessions)
			a.store.mu.Unlock()
			if held != 1 {
				t.Errorf("the store holds %d sessions, want the parent alone", held)
			}
		})
	}
}

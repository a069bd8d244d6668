package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// FuzzTurnAfterLoad: whatever log the loader accepts, the session loads,
// replays, and its next turn runs and leaves a valid log: nothing in an
// accepted log may panic or wedge a turn. Seeds are the loader's
// (session/testdata/fuzz/FuzzParse). Run it with
//
//	go test ./agent -run '^$' -fuzz FuzzTurnAfterLoad -fuzztime 1m
func FuzzTurnAfterLoad(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "session", "testdata", "fuzz", "FuzzParse", "*"))
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		// go test fuzz v1\n[]byte("…")\n
		_, lit, _ := strings.Cut(string(b), "[]byte(")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimSpace(lit), ")"))
		if err != nil {
			f.Fatalf("%s: %v", path, err)
		}
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ld, err := session.Parse(bytes.NewReader(data), "f.jsonl")
		if err != nil {
			return
		}
		// A log is opened only under the id its session/start names (the
		// checker makes it the first record): one that names another is a
		// copy of that session's log, refused by design.
		var start session.SessionStart
		if len(ld.Events) == 0 || session.Unmarshal(ld.Events[0].Data, &start) != nil || session.CheckSessionID(start.SessionID) != nil {
			return
		}
		id := start.SessionID
		dir := t.TempDir()
		path := session.Path(dir, id)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}
		a := testAgent(t, Config{StateDir: dir, Provider: p})
		if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: dir}, &editor{}); err != nil {
			t.Fatalf("LoadSession of a log the loader accepts: %v", err)
		}
		if resp, err := ask(t.Context(), a, id, "hi"); err != nil || resp.StopReason != acp.StopEndTurn {
			t.Fatalf("the next turn = %v, %v; want end_turn", resp, err)
		}
		a.Close()
		ld, err = session.Load(path)
		if err != nil || ld.OpenTurn != 0 {
			t.Fatalf("after the turn the log = %v, open turn %d", err, ld.OpenTurn)
		}
	})
}

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
		if _, err := session.Parse(bytes.NewReader(data), "f.jsonl"); err != nil {
			return
		}
		dir := t.TempDir()
		path := session.Path(dir, "sess_f")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}
		a := testAgent(t, Config{StateDir: dir, Provider: p})
		if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: "sess_f", Cwd: dir}, &editor{}); err != nil {
			t.Fatalf("LoadSession of a log the loader accepts: %v", err)
		}
		if resp, err := ask(t.Context(), a, "sess_f", "hi"); err != nil || resp.StopReason != acp.StopEndTurn {
			t.Fatalf("the next turn = %v, %v; want end_turn", resp, err)
		}
		a.Close()
		ld, err := session.Load(path)
		if err != nil || ld.OpenTurn != 0 {
			t.Fatalf("after the turn the log = %v, open turn %d", err, ld.OpenTurn)
		}
	})
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/session"
)

// makeSession writes a log with one prompt, whose text becomes its title.
func makeSession(t *testing.T, stateDir, id, cwd, prompt string) {
	t.Helper()
	l, err := session.Create(stateDir, id, session.SessionStart{SessionID: id, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal([]map[string]string{{"type": "text", "text": prompt}})
	if _, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: p, Text: prompt}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func runSessionsCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runEnv(context.Background(), append([]string{"sessions"}, args...), strings.NewReader(""), &out, &errOut,
		env{getenv: func(string) string { return "" }, home: t.TempDir()})
	return code, out.String(), errOut.String()
}

// TestSessions_ListsRecentFirstBounded: `rebound sessions` lists the
// sessions of the state dir, most recently active first, at most --limit
// of them (saying more exist), each on one line with its title and cwd
// bounded and their control characters made harmless.
func TestSessions_ListsRecentFirstBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		for i := range 5 {
			makeSession(t, dir, fmt.Sprintf("sess_%d", i), "/p/"+strings.Repeat("d", i*40), fmt.Sprintf("prompt %d\x1b[2J\u202e%s", i, strings.Repeat("long ", 30)))
			time.Sleep(time.Minute) // the next is active later
		}
		code, out, errOut := runSessionsCmd(t, "--state-dir", dir, "--limit", "3")
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
		lines := strings.Split(out, "\n")
		var rows []string
		for _, l := range lines {
			if strings.HasPrefix(l, "sess_") {
				rows = append(rows, l)
			}
		}
		if len(rows) != 3 || !strings.HasPrefix(rows[0], "sess_4 ") || !strings.HasPrefix(rows[1], "sess_3 ") || !strings.HasPrefix(rows[2], "sess_2 ") {
			t.Errorf("rows %q: want sess_4, sess_3, sess_2 (most recent first, 3 of them)\n%s", rows, out)
		}
		if !strings.Contains(out, "--limit N shows more") || !strings.Contains(out, "rebound inspect ID") {
			t.Errorf("the listing says neither that more exist nor how to inspect one:\n%s", out)
		}
		for _, r := range rows {
			if strings.ContainsAny(r, "\x1b\u202e") || len([]rune(r)) > 20+maxTitleChars+maxCwdChars+40 {
				t.Errorf("row %q: not bounded and printable", r)
			}
		}
		if _, out, _ := runSessionsCmd(t, "--state-dir", dir); strings.Contains(out, "--limit N shows more") || strings.Count(out, "\nsess_") != 5 {
			t.Errorf("all 5 under the default limit:\n%s", out)
		}
	})
}

func TestSessions_EmptyAndUsage(t *testing.T) {
	dir := t.TempDir()
	if code, out, _ := runSessionsCmd(t, "--state-dir", dir); code != 0 || !strings.HasPrefix(out, "No sessions in ") {
		t.Errorf("an empty state dir: exit %d, %q", code, out)
	}
	for _, args := range [][]string{{"--limit", "0"}, {"--limit", "1001"}, {"extra"}} {
		if code, out, _ := runSessionsCmd(t, append(args, "--state-dir", dir)...); code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", args, code, out)
		}
	}
}

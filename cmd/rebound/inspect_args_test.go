package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// rebound inspect's command line: flags before and after SESSION, one
// SESSION exactly, an unknown flag a usage error, and an HTML page that
// cannot be written a failure before anything is printed.
func TestInspect_Arguments(t *testing.T) {
	log := writeInspectLog(t, t.TempDir(), "s.jsonl", snapshotEvents(t, "plain_turn"))
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // part of stderr
		stdout string // part of stdout; "" for none at all
	}{
		{"text", []string{log}, 0, "", "turn 1 · "},
		{"json before", []string{"--json", log}, 0, "", `"turns"`},
		{"json after", []string{log, "--json"}, 0, "", `"turns"`},
		{"two sessions", []string{"a", "--json", "b"}, 2, "one session at a time, got 2: a b", ""},
		{"three sessions", []string{"a", "b", "c"}, 2, "Usage: rebound inspect", ""},
		{"unknown flag", []string{log, "--nope"}, 2, "flag provided but not defined: -nope", ""},
		{"flag without its value", []string{log, "--html"}, 2, "flag needs an argument: -html", ""},
		{"page not writable", []string{"--html", filepath.Join(t.TempDir(), "no", "dir", "p.html"), log}, 1, "rebound inspect: open ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runInspectCmd(t, inspectEnv(t, nil), append([]string{"inspect"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.stderr)
			}
			if tc.stdout == "" && out != "" || !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout %q, want %q", out, tc.stdout)
			}
		})
	}
}

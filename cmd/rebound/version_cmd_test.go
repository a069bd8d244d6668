package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestVersionOnStdout: --version and `rebound version` print the version on
// stdout (a script captures it there) and nothing on stderr.
func TestVersionOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		var out, errOut bytes.Buffer
		code := runEnv(context.Background(), args, strings.NewReader(""), &out, &errOut, env{getenv: func(string) string { return "" }})
		if code != 0 || out.String() != "rebound "+version()+"\n" || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0, %q, nothing", args, code, out.String(), errOut.String(), "rebound "+version()+"\n")
		}
	}
	var out, errOut bytes.Buffer
	if code := runEnv(context.Background(), []string{"version", "x"}, strings.NewReader(""), &out, &errOut, env{}); code != 2 || out.Len() != 0 {
		t.Errorf("version x: exit %d, stdout %q; want 2 and nothing", code, out.String())
	}
}

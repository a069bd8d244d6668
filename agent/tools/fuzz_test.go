package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/tools"
)

// FuzzParse: the argument decoder never panics, and a value it accepts,
// encoded with Canonical, parses back to the same value, so what the editor
// shows is exactly what runs.
func FuzzParse(f *testing.F) {
	for _, s := range []struct{ tool, args string }{
		{tools.ReadFile, `{"path":"a.go","offset":10,"limit":5}`},
		{tools.WriteFile, `{"path":"a","content":"<x>\u2028\ud800"}`},
		{tools.EditFile, `{"path":"a","old_text":"x","new_text":"","replace_all":true}`},
		{tools.FindFiles, `{"glob":"**/*.go","path":"src"}`},
		{tools.SearchFiles, `{"pattern":"foo\\(","glob":"*.{go,ts}"}`},
		{tools.RunCommand, `{"command":"echo hello","COMMAND":"touch x"}`},
		{tools.RunCommand, `{"command":"a","command":"b","timeout_seconds":1e3}`},
		{"nope", `{}`},
	} {
		f.Add(s.tool, s.args)
	}
	f.Fuzz(func(t *testing.T, tool, arguments string) {
		args, err := tools.Parse(tool, arguments)
		if err != nil {
			return
		}
		canon := tools.Canonical(args)
		if canon == nil {
			t.Fatalf("Canonical(%#v) = nil", args)
		}
		again, err := tools.Parse(tool, string(canon))
		if err != nil {
			t.Fatalf("Parse(%s) accepted %q, but not its canonical form %s: %v", tool, arguments, canon, err)
		}
		if diff := cmp.Diff(args, again); diff != "" {
			t.Fatalf("Parse(Canonical(args)) differs (-args +again):\n%s", diff)
		}
	})
}

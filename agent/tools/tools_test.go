package tools_test

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/llm"

	"github.com/rebound-agent/rebound/internal/golden"
)

var update = golden.Update

// TestDefinitions_Fresh keeps each platform's checked-in definitions what
// the argument types generate for it, whatever the host, and Definitions
// what the file of the host's platform says.
func TestDefinitions_Fresh(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		got, err := tools.GenerateDefinitions(goos)
		if err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, tools.DefinitionsFile(goos), got, *update, "go test ./agent/tools -update")
	}
	if *update {
		return
	}
	want, err := os.ReadFile(tools.DefinitionsFile(runtime.GOOS))
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := json.MarshalIndent(tools.Definitions(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.TrimSpace(string(want)), string(embedded)); diff != "" {
		t.Errorf("Definitions() differs from %s (-file +Definitions):\n%s", tools.DefinitionsFile(runtime.GOOS), diff)
	}
}

// The model is told which shell runs its commands on every platform, in
// the tool's description and its command argument's: sh -c on Unix,
// cmd.exe on Windows, never the other's. Every platform Go builds for gets
// one of the two files, generated the same way.
func TestDefinitions_ShellPerPlatform(t *testing.T) {
	if *update {
		t.Skip("reads the embedded files, which -update is rewriting")
	}
	for _, goos := range []string{"linux", "darwin", "freebsd", "openbsd", "netbsd", "dragonfly", "solaris", "illumos", "aix", "android", "ios", "windows"} {
		want, wrong := "sh -c", "cmd.exe"
		if goos == "windows" {
			want, wrong = "cmd.exe /c", "sh -c"
		}
		got, err := tools.GenerateDefinitions(goos)
		if err != nil {
			t.Fatal(err)
		}
		file, err := os.ReadFile(tools.DefinitionsFile(goos))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, file) {
			t.Errorf("%s: generated definitions differ from %s", goos, tools.DefinitionsFile(goos))
		}
		var run *llm.ToolDef
		for _, d := range tools.DefinitionsFor(goos) {
			if d.Name == tools.RunCommand {
				run = &d
			}
		}
		if run == nil {
			t.Fatalf("%s: no run_command", goos)
		}
		var params struct {
			Properties struct {
				Command struct{ Description string } `json:"command"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(run.Parameters, &params); err != nil {
			t.Fatal(err)
		}
		for what, text := range map[string]string{"description": run.Description, "command's description": params.Properties.Command.Description} {
			if !strings.Contains(text, "("+want+")") && !strings.Contains(text, "with "+want+".") || strings.Contains(text, wrong) {
				t.Errorf("%s: run_command's %s %q, want it to name %s (and not %s)", goos, what, text, want, wrong)
			}
		}
	}
}

func TestDefinitions_Shape(t *testing.T) {
	defs := tools.Definitions()
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
		var s map[string]any
		if err := json.Unmarshal(d.Parameters, &s); err != nil {
			t.Fatalf("%s: parameters are not JSON: %v", d.Name, err)
		}
		for _, k := range []string{"$schema", "$id", "$ref", "$defs"} {
			if _, ok := s[k]; ok {
				t.Errorf("%s: schema has %s", d.Name, k)
			}
		}
		if s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s: type = %v, additionalProperties = %v; want object, false", d.Name, s["type"], s["additionalProperties"])
		}
		if d.Description == "" {
			t.Errorf("%s has no description", d.Name)
		}
	}
	want := []string{tools.ReadFile, tools.WriteFile, tools.EditFile, tools.FindFiles, tools.SearchFiles, tools.RunCommand, tools.UpdatePlan}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tool order (-want +got):\n%s", diff)
	}
	defs[0].Name = "mutated"
	if tools.Definitions()[0].Name != tools.ReadFile {
		t.Error("Definitions returned a shared slice")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, tool, args string
		want             any
	}{
		{"read", tools.ReadFile, `{"path":"a.go","offset":10,"limit":5}`, &tools.ReadFileArgs{Path: "a.go", Offset: 10, Limit: 5}},
		{"escaped key", tools.ReadFile, `{"pa\u0074h":"a.go"}`, &tools.ReadFileArgs{Path: "a.go"}},
		{"write empty content", tools.WriteFile, `{"path":"a.go","content":""}`, &tools.WriteFileArgs{Path: "a.go"}},
		{"edit", tools.EditFile, `{"path":"a.go","old_text":"x","new_text":"","replace_all":true}`, &tools.EditFileArgs{Path: "a.go", OldText: "x", ReplaceAll: true}},
		{"find", tools.FindFiles, `{"glob":"**/*.go","path":"src"}`, &tools.FindFilesArgs{Glob: "**/*.go", Path: "src"}},
		{"search", tools.SearchFiles, `{"pattern":"foo\\(","glob":"*.go"}`, &tools.SearchFilesArgs{Pattern: `foo\(`, Glob: "*.go"}},
		{"run", tools.RunCommand, `{"command":"go test ./...","timeout_seconds":60}`, &tools.RunCommandArgs{Command: "go test ./...", TimeoutSeconds: 60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tools.Parse(tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, tool, args string
		want             string // the exact message the model reads
	}{
		{"unknown tool", "delete_file", `{}`,
			`unknown tool "delete_file"; the tools are read_file, write_file, edit_file, find_files, search_files, run_command, update_plan`},
		{"missing path", tools.ReadFile, `{}`, `read_file: "path" is required`},
		{"empty arguments", tools.ReadFile, ``, `read_file: "path" is required`},
		{"null path", tools.ReadFile, `{"path":null}`, `read_file: "path" is required`},
		{"negatives", tools.ReadFile, `{"path":"a","offset":-1,"limit":-2}`,
			`read_file: "offset" must not be negative (got -1); "limit" must not be negative (got -2)`},
		{"wrong type", tools.ReadFile, `{"path":"a","offset":"10"}`, `read_file: "offset" must be an integer, not string`},
		{"invalid JSON", tools.ReadFile, `{"path":`,
			`read_file: the arguments must be one JSON object, like {"path": "..."}: unexpected end of JSON input (at byte 8)`},
		{"not an object", tools.ReadFile, `["a.go"]`,
			`read_file: the arguments must be one JSON object, like {"path": "..."}: got a JSON array`},
		{"null arguments", tools.ReadFile, `null`,
			`read_file: the arguments must be one JSON object, like {"path": "..."}: got null`},
		{"write without content", tools.WriteFile, `{"path":"a"}`, `write_file: "content" is required (it may be an empty string)`},
		{"edit empty old_text", tools.EditFile, `{"path":"a","old_text":"","new_text":"x"}`, `edit_file: "old_text" is required`},
		{"edit without new_text", tools.EditFile, `{"path":"a","old_text":"x"}`,
			`edit_file: "new_text" is required (use an empty string to delete old_text)`},
		{"find without glob", tools.FindFiles, `{"path":"src"}`, `find_files: "glob" is required`},
		{"find bad glob", tools.FindFiles, `{"glob":"[a-"}`, `find_files: glob "[a-" is not valid; check its brackets and braces`},
		{"search without pattern", tools.SearchFiles, `{}`, `search_files: "pattern" is required`},
		{"search bad pattern", tools.SearchFiles, `{"pattern":"foo("}`,
			"search_files: \"pattern\" is not a valid Go (RE2) regular expression: error parsing regexp: missing closing ): `foo(`"},
		{"search bad glob", tools.SearchFiles, `{"pattern":"x","glob":"{a"}`, `search_files: glob "{a" is not valid; check its brackets and braces`},
		{"run blank command", tools.RunCommand, `{"command":"  "}`, `run_command: "command" is required`},
		{"unknown key", tools.ReadFile, `{"path":"a.go","explanation":"why"}`,
			`read_file: "explanation" is not an argument of this tool; the arguments are path, offset, limit`},
		// Shown "echo hello", would have run "touch x".
		{"key differing in case", tools.RunCommand, `{"command":"echo hello","COMMAND":"touch x"}`,
			`run_command: "COMMAND" is not an argument name; names are case-sensitive, so write "command"; the arguments are command, cwd, timeout_seconds`},
		{"duplicate key", tools.RunCommand, `{"command":"echo hello","command":"touch x"}`,
			`run_command: "command" is given more than once; give each argument once; the arguments are command, cwd, timeout_seconds`},
		{"duplicate spelt with an escape", tools.RunCommand, `{"command":"echo hello","comm\u0061nd":"touch x"}`,
			`run_command: "command" is given more than once; give each argument once; the arguments are command, cwd, timeout_seconds`},
		{"several bad keys, each once", tools.ReadFile, `{"Path":"a","x":1,"x":2,"path":"a","path":"b"}`,
			`read_file: "Path" is not an argument name; names are case-sensitive, so write "path"; "x" is not an argument of this tool; "path" is given more than once; give each argument once; the arguments are path, offset, limit`},
		{"many bad keys", tools.ReadFile, `{"path":"a","a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1}`,
			`read_file: "a" is not an argument of this tool; "b" is not an argument of this tool; "c" is not an argument of this tool; "d" is not an argument of this tool; "e" is not an argument of this tool; and 2 more keys like these; the arguments are path, offset, limit`},
		{"run negative timeout", tools.RunCommand, `{"command":"ls","timeout_seconds":-5}`, `run_command: "timeout_seconds" must not be negative (got -5)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tools.Parse(tt.tool, tt.args)
			if err == nil {
				t.Fatalf("Parse = %#v, want error %q", got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// Canonical is what runs: it drops what the model wrote but Parse does not
// keep (spacing, escapes, an explicit zero), and parses back to the same
// value.
func TestCanonical(t *testing.T) {
	tests := []struct{ tool, args, want string }{
		{tools.RunCommand, `{ "command" : "echo \u003chi\u003e && ls", "timeout_seconds": 0 }`, `{"command":"echo <hi> && ls"}`},
		{tools.WriteFile, `{"path":"a.go","content":""}`, `{"path":"a.go","content":""}`},
		{tools.EditFile, `{"replace_all":false,"new_text":"","old_text":"x","path":"a"}`, `{"path":"a","old_text":"x","new_text":""}`},
		{tools.ReadFile, `{"path":"a","offset":3,"limit":null}`, `{"path":"a","offset":3}`},
	}
	for _, tt := range tests {
		args, err := tools.Parse(tt.tool, tt.args)
		if err != nil {
			t.Fatal(err)
		}
		got := tools.Canonical(args)
		if string(got) != tt.want {
			t.Errorf("Canonical(Parse(%s)) = %s, want %s", tt.args, got, tt.want)
		}
		again, err := tools.Parse(tt.tool, string(got))
		if err != nil {
			t.Fatalf("Parse(Canonical) = %v", err)
		}
		if diff := cmp.Diff(args, again); diff != "" {
			t.Errorf("Parse(Canonical(args)) differs (-args +again):\n%s", diff)
		}
	}
	if got := tools.Canonical(make(chan int)); got != nil {
		t.Errorf("Canonical(chan) = %s, want nil", got)
	}
}

func TestParse_TooLarge(t *testing.T) {
	content := strings.Repeat("x", tools.MaxArgumentsBytes)
	args, err := json.Marshal(tools.WriteFileArgs{Path: "a", Content: content})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tools.Parse(tools.WriteFile, string(args)); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("Parse of %d bytes: error = %v, want too large", len(args), err)
	}
	// Just under the bound is fine.
	args = bytes.Replace(args, []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), nil, 1)
	if _, err := tools.Parse(tools.WriteFile, string(args)); err != nil {
		t.Errorf("Parse of %d bytes: %v", len(args), err)
	}
}

func TestDescribe(t *testing.T) {
	ws := tools.NewWorkspace("/w/proj")
	long := "go test -run 'TestSomethingVeryLong' -count=1 -race -timeout 10m ./agent/... ./recovery/... ./session/..."
	tests := []struct {
		name string
		args any
		want tools.Info
	}{
		{"read", &tools.ReadFileArgs{Path: "README.md"},
			tools.Info{Kind: "read", Title: "Read `README.md`", Locations: []string{"/w/proj/README.md"}}},
		{"read range", &tools.ReadFileArgs{Path: "/w/proj/a.go", Offset: 10, Limit: 31},
			tools.Info{Kind: "read", Title: "Read `a.go` (lines 10–40)", Locations: []string{"/w/proj/a.go"}}},
		{"read limit only", &tools.ReadFileArgs{Path: "a.go", Limit: 40},
			tools.Info{Kind: "read", Title: "Read `a.go` (lines 1–40)", Locations: []string{"/w/proj/a.go"}}},
		{"read from", &tools.ReadFileArgs{Path: "a.go", Offset: 100},
			tools.Info{Kind: "read", Title: "Read `a.go` (from line 100)", Locations: []string{"/w/proj/a.go"}}},
		{"read outside cwd", &tools.ReadFileArgs{Path: "../lib/x.go"},
			tools.Info{Kind: "read", Title: "Read `/w/lib/x.go`", Locations: []string{"/w/lib/x.go"}}},
		{"write", &tools.WriteFileArgs{Path: "cmd/main.go"},
			tools.Info{Kind: "edit", Title: "Write `cmd/main.go`", Locations: []string{"/w/proj/cmd/main.go"}, Mutates: true}},
		{"edit, by value", tools.EditFileArgs{Path: "./cmd/main.go"},
			tools.Info{Kind: "edit", Title: "Edit `cmd/main.go`", Locations: []string{"/w/proj/cmd/main.go"}, Mutates: true}},
		{"find", &tools.FindFilesArgs{Glob: "**/*.go"},
			tools.Info{Kind: "search", Title: "Find `**/*.go`"}},
		{"find in", &tools.FindFilesArgs{Glob: "*.go", Path: "agent"},
			tools.Info{Kind: "search", Title: "Find `*.go` in `agent`", Locations: []string{"/w/proj/agent"}}},
		{"search", &tools.SearchFilesArgs{Pattern: `foo\(`, Path: "dir"},
			tools.Info{Kind: "search", Title: "Search `foo\\(` in `dir`", Locations: []string{"/w/proj/dir"}}},
		{"search with glob", &tools.SearchFilesArgs{Pattern: "x", Glob: "*.go"},
			tools.Info{Kind: "search", Title: "Search `x` (`*.go`)"}},
		{"run", &tools.RunCommandArgs{Command: "go test ./..."},
			tools.Info{Kind: "execute", Title: "Run `go test ./...`", Mutates: true}},
		{"run with backticks and cwd", &tools.RunCommandArgs{Command: "echo `date`", Cwd: "sub"},
			tools.Info{Kind: "execute", Title: "Run `` echo `date` `` in `sub`", Mutates: true}},
		// Issue 29: a title shows the whole command, never a cut one.
		{"run long", &tools.RunCommandArgs{Command: long},
			tools.Info{Kind: "execute", Title: "Run this command:\n```sh\n" + long + "\n```", Mutates: true}},
		{"run multi-line", &tools.RunCommandArgs{Command: "cat <<EOF > x\nhello\nEOF\n", Cwd: "sub"},
			tools.Info{Kind: "execute", Title: "Run this command in `sub` (3 lines):\n```sh\ncat <<EOF > x\nhello\nEOF\n```", Mutates: true}},
		{"run hidden", &tools.RunCommandArgs{Command: "ls\u202e -la"},
			tools.Info{Kind: "execute", Title: "Run this command; it holds invisible or control characters, each shown as ⟨U+…⟩:\n```sh\nls⟨U+202E⟩ -la\n```", Mutates: true}},
		{"edit a path with a newline", &tools.EditFileArgs{Path: "a\nb.go"},
			tools.Info{Kind: "edit", Title: "Edit `a⟨U+000A⟩b.go`", Locations: []string{"/w/proj/a\nb.go"}, Mutates: true}},
		{"unknown", 42, tools.Info{Kind: "other", Title: "Unknown tool call (int)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tools.Describe(ws, tt.args)); diff != "" {
				t.Errorf("Describe (-want +got):\n%s", diff)
			}
		})
	}
}

// Package tools holds the tools Rebound offers the model: their names,
// argument types and JSON Schemas, the strict parsing of the model's
// arguments, the confinement of paths to the workspace (checked again when a
// file is opened, through os.Root), the places where a write needs a
// person's yes (Workspace.Protected), how text from the model is shown so
// that it reads as what runs (Visible, CommandTitle, MCPTitle: titles that
// hold a command or arguments whole, for clients that show nothing else),
// and the local implementations of reading, writing, editing, finding and
// searching files, which open regular files only and never block on a FIFO.
//
// The package knows nothing about ACP or the session log: the agent decides
// whether a call goes to the editor's file system or to LocalFS, asks for
// permission when Describe says a call mutates, and records the results.
// Every error meant for the model says what was wrong and how to fix the
// call.
package tools

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/agent/tools/shell"
	"github.com/rebound-agent/rebound/llm"
)

// Tool names. They are stable: users mention them in their instructions.
const (
	ReadFile    = "read_file"
	WriteFile   = "write_file"
	EditFile    = "edit_file"
	FindFiles   = "find_files"
	SearchFiles = "search_files"
	RunCommand  = "run_command"
	UpdatePlan  = "update_plan"
)

// Bounds on a plan: the model's arguments may come from injected text, and
// the editor shows every entry.
const (
	MaxPlanEntries      = 20
	MaxPlanEntryRunes   = 200
	planEntryStatuses   = "pending, in_progress, completed"
	planEntryPriorities = "high, medium, low"
)

// MaxArgumentsBytes bounds the arguments JSON of one call.
const MaxArgumentsBytes = 1 << 20

// ReadFileArgs are the arguments of read_file.
type ReadFileArgs struct {
	Path   string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file to read: a path relative to the workspace directory, or an absolute path inside the workspace."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"The 1-based line number to start reading at. Default: 1."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"The maximum number of lines to read. Default: up to 2000 lines."`
}

// WriteFileArgs are the arguments of write_file.
type WriteFileArgs struct {
	Path    string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file to create or replace: a path relative to the workspace directory, or an absolute path inside the workspace."`
	Content string `json:"content" jsonschema_description:"The complete new content of the file."`
}

// EditFileArgs are the arguments of edit_file.
type EditFileArgs struct {
	Path       string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The file to edit: a path relative to the workspace directory, or an absolute path inside the workspace."`
	OldText    string `json:"old_text" jsonschema:"minLength=1" jsonschema_description:"The exact text to replace, copied from the file with its whitespace and indentation. It must occur exactly once unless replace_all is true."`
	NewText    string `json:"new_text" jsonschema_description:"The text to put in its place. Empty deletes old_text."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence of old_text instead of requiring exactly one. Default: false."`
}

// FindFilesArgs are the arguments of find_files.
type FindFilesArgs struct {
	Glob string `json:"glob" jsonschema:"minLength=1" jsonschema_description:"A glob such as *.go, **/*_test.go or cmd/**/main.go. ** matches any number of directories. A glob without / matches file names at any depth."`
	Path string `json:"path,omitempty" jsonschema_description:"The directory to search in, relative to the workspace directory or absolute. Default: the workspace directory."`
}

// SearchFilesArgs are the arguments of search_files.
type SearchFilesArgs struct {
	Pattern string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"A regular expression in Go RE2 syntax, matched against each line. Escape regexp characters to search for literal text, e.g. foo\\(."`
	Path    string `json:"path,omitempty" jsonschema_description:"The directory or file to search, relative to the workspace directory or absolute. Default: the workspace directory."`
	Glob    string `json:"glob,omitempty" jsonschema_description:"Only search files matching this glob, e.g. *.go or src/**/*.ts. A glob without / matches file names at any depth."`
}

// RunCommandArgs are the arguments of run_command.
type RunCommandArgs struct {
	Command        string `json:"command" jsonschema:"minLength=1"` // described per platform: runCommandDescriptions
	Cwd            string `json:"cwd,omitempty" jsonschema_description:"The directory to run it in, relative to the workspace directory or absolute. Default: the workspace directory."`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"minimum=1" jsonschema_description:"Stop the command after this many seconds. Leave it out for the default."`
}

// UpdatePlanArgs are the arguments of update_plan: the whole plan.
type UpdatePlanArgs struct {
	Entries []PlanEntryArgs `json:"entries" jsonschema:"maxItems=20" jsonschema_description:"Every entry of the plan, in order; this replaces the previous plan. An empty list clears it."`
}

// PlanEntryArgs is one entry of update_plan.
type PlanEntryArgs struct {
	Content  string `json:"content" jsonschema:"minLength=1,maxLength=200" jsonschema_description:"The task, in a short line."`
	Status   string `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed" jsonschema_description:"pending, in_progress (one at a time) or completed."`
	Priority string `json:"priority" jsonschema:"enum=high,enum=medium,enum=low" jsonschema_description:"high, medium or low."`
}

// tool ties a name to its description and argument type, in the order the
// model is shown them.
type tool struct {
	name, description string
	args              any // pointer to the zero args struct
}

var all = []tool{
	{ReadFile, "Read a text file in the workspace. Returns the text as it is in the file, up to 2000 lines or 256 KiB at a time; a note at the end tells how to read on. Use offset and limit for part of a large file. Read a file before editing it.", &ReadFileArgs{}},
	{WriteFile, "Create a file, or replace the whole content of an existing one. Missing parent directories are created. To change part of an existing file, use edit_file instead.", &WriteFileArgs{}},
	{EditFile, "Replace text in an existing file. old_text must match the file exactly, including whitespace and indentation, and exactly once: include enough surrounding lines to make it unique, or set replace_all to replace every occurrence. Read the file first.", &EditFileArgs{}},
	{FindFiles, "Find files by path with a glob. A glob without / matches file names at any depth, so *.go finds every Go file. Skips .git and files ignored by .gitignore. Returns sorted paths; use it to locate files before reading them.", &FindFilesArgs{}},
	{SearchFiles, "Search the contents of files for a regular expression (Go RE2 syntax) and return the matching lines as path:line: text. Use it to find definitions, usages and strings. Skips binary files, files over 2 MiB, .git and files ignored by .gitignore.", &SearchFilesArgs{}},
	{RunCommand, "", &RunCommandArgs{}}, // described per platform: runCommandDescriptions
	{UpdatePlan, "Keep a short plan of a multi-step task, shown to the user in the editor. Send the whole plan each time (it replaces the last one): at most 20 entries of one line each. Mark an entry in_progress when you start it and completed when it is done.", &UpdatePlanArgs{}},
}

// runCommandDescriptions are run_command's description and its command
// argument's, for the interpreter sh that runs commands on the platform
// (shell.InterpFor): the model must write that shell's syntax, so it is told
// which one it is.
func runCommandDescriptions(sh shell.Interp) (tool, command string) {
	return "Run a shell command (" + sh.Name + ") in the workspace and return its output and exit status. Use it to build, test, run git and other programs; the user may be asked to approve it. To read, search or edit files, use the file tools instead.",
		"The shell command to run with " + sh.Name + "."
}

// Definitions returns the six tools, in a stable order, for the model's
// request. Their schemas are generated from the argument types with
// invopop/jsonschema by a test (go test ./agent/tools -update), checked in
// as definitions.json (Unix) and definitions_windows.json, one for each
// interpreter run_command can name, and embedded, so the binary carries no
// reflection library and starts no slower; the test checks both on any
// host and fails when one is stale.
func Definitions() []llm.ToolDef {
	return append([]llm.ToolDef(nil), definitions()...)
}

var (
	//go:embed definitions.json
	definitionsUnix []byte
	//go:embed definitions_windows.json
	definitionsWindows []byte
)

// DefinitionsFile is the name of the checked-in definitions for goos.
func DefinitionsFile(goos string) string {
	if goos == "windows" {
		return "definitions_windows.json"
	}
	return "definitions.json"
}

// definitionsFor decodes the embedded definitions for goos.
func definitionsFor(goos string) []llm.ToolDef {
	data := definitionsUnix
	if goos == "windows" {
		data = definitionsWindows
	}
	var defs []llm.ToolDef
	if err := json.Unmarshal(data, &defs); err != nil || len(defs) != len(all) {
		panic(fmt.Sprintf("tools: embedded %s is broken (%d tools, %v); run go test ./agent/tools -update", DefinitionsFile(goos), len(defs), err))
	}
	return defs
}

var definitions = sync.OnceValue(func() []llm.ToolDef { return definitionsFor(runtime.GOOS) })

// Parse decodes the model's arguments JSON for the tool name and returns a
// pointer to the matching args struct (*ReadFileArgs and so on). Decoding is
// strict, because the user approves what they are shown: every key must be
// exactly one of the tool's argument names, once. encoding/json alone would
// match {"COMMAND": ...} to command and keep the last of two "command"s, so
// a call could show one command and run another. Unknown tools, malformed
// JSON, unknown, misspelt-case or repeated keys, missing required fields and
// out-of-range numbers are errors written for the model, naming the tool.
func Parse(name, arguments string) (any, error) {
	var args any
	for _, t := range all {
		if t.name == name {
			args = reflect.New(reflect.TypeOf(t.args).Elem()).Interface()
		}
	}
	if args == nil {
		names := make([]string, len(all))
		for i, t := range all {
			names[i] = t.name
		}
		return nil, fmt.Errorf("unknown tool %q; the tools are %s", name, strings.Join(names, ", "))
	}
	if len(arguments) > MaxArgumentsBytes {
		return nil, fmt.Errorf("%s: the arguments are too large (%d bytes; the limit is %d); for a large file, write part of it and add the rest with edit_file", name, len(arguments), MaxArgumentsBytes)
	}
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}" // some models send nothing for "no arguments"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(arguments), &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%s: the arguments must be one JSON object, like {\"path\": \"...\"}: %v", name, jsonProblem(err))
	}
	if err := checkKeys([]byte(arguments), argNames(args)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := json.Unmarshal([]byte(arguments), args); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			return nil, fmt.Errorf("%s: %q must be %s, not %s", name, te.Field, jsonType(te.Type), te.Value)
		}
		return nil, fmt.Errorf("%s: the arguments cannot be decoded: %v", name, err)
	}
	if err := validate(fields, args); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return args, nil
}

// Canonical returns the JSON encoding of args as Parse returned them: the
// values that will run, for the editor to show as the call's raw input in
// place of the model's text, which may hold keys Parse refused or spellings
// of the same value that read differently. Canonical(args) parses back to
// the same args. It is nil for a value that cannot be encoded, which Parse
// never returns.
func Canonical(args any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<" stays readable; the editor decodes it either way
	if err := enc.Encode(args); err != nil {
		return nil
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// maxKeyProblems bounds how many bad keys one error lists.
const maxKeyProblems = 5

// checkKeys reports the top-level keys of the object in arguments (already
// known to be valid JSON) that are not exactly one of names, or that repeat,
// and lists names so that the model can fix its call.
func checkKeys(arguments []byte, names []string) error {
	dec := json.NewDecoder(bytes.NewReader(arguments))
	if _, err := dec.Token(); err != nil { // the '{'
		return err
	}
	seen := map[string]bool{}
	var problems []string
	more := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
		known := slices.Contains(names, key)
		var problem string
		switch {
		case seen[key] && known:
			problem = fmt.Sprintf("%q is given more than once; give each argument once", key)
		case seen[key]:
			// Reported already.
		case !known:
			problem = fmt.Sprintf("%q is not an argument of this tool", key)
			if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, key) }); i >= 0 {
				problem = fmt.Sprintf("%q is not an argument name; names are case-sensitive, so write %q", key, names[i])
			}
		}
		seen[key] = true
		switch {
		case problem == "":
		case len(problems) < maxKeyProblems:
			problems = append(problems, problem)
		default:
			more++
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if more > 0 {
		problems = append(problems, fmt.Sprintf("and %d more keys like these", more))
	}
	return fmt.Errorf("%s; the arguments are %s", strings.Join(problems, "; "), strings.Join(names, ", "))
}

// argNames returns the JSON names of the fields of the struct args points
// to, in their order.
func argNames(args any) []string {
	t := reflect.TypeOf(args).Elem()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// validate checks what the types cannot: presence, non-emptiness, ranges and
// syntax. fields tells present from zero.
func validate(fields map[string]json.RawMessage, args any) error {
	present := func(k string) bool {
		v, ok := fields[k]
		return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	required := func(k, v string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("%q is required", k)
		}
		return nil
	}
	notNegative := func(k string, v int) error {
		if v < 0 {
			return fmt.Errorf("%q must not be negative (got %d)", k, v)
		}
		return nil
	}
	switch a := args.(type) {
	case *ReadFileArgs:
		return joinErrs(required("path", a.Path), notNegative("offset", a.Offset), notNegative("limit", a.Limit))
	case *WriteFileArgs:
		var err error
		if !present("content") {
			err = errors.New(`"content" is required (it may be an empty string)`)
		}
		return joinErrs(required("path", a.Path), err)
	case *EditFileArgs:
		var err error
		if !present("new_text") {
			err = errors.New(`"new_text" is required (use an empty string to delete old_text)`)
		}
		return joinErrs(required("path", a.Path), required("old_text", a.OldText), err)
	case *FindFilesArgs:
		if err := required("glob", a.Glob); err != nil {
			return err
		}
		_, err := globMatcher(a.Glob)
		return err
	case *SearchFilesArgs:
		if a.Pattern == "" {
			return errors.New(`"pattern" is required`)
		}
		if _, err := regexp.Compile(a.Pattern); err != nil {
			return fmt.Errorf("%q is not a valid Go (RE2) regular expression: %v", "pattern", err)
		}
		if a.Glob != "" {
			_, err := globMatcher(a.Glob)
			return err
		}
		return nil
	case *RunCommandArgs:
		return joinErrs(required("command", a.Command), notNegative("timeout_seconds", a.TimeoutSeconds))
	case *UpdatePlanArgs:
		return validatePlan(fields["entries"], a)
	}
	return nil
}

// validatePlan checks update_plan's entries: present, bounded, each with
// exactly the known keys (checkKeys only sees the top level), non-empty
// one-line content and values from the enums.
func validatePlan(raw json.RawMessage, a *UpdatePlanArgs) error {
	if a.Entries == nil {
		return errors.New(`"entries" is required (an empty list clears the plan)`)
	}
	if len(a.Entries) > MaxPlanEntries {
		return fmt.Errorf(`"entries" has %d entries; the limit is %d, so merge or drop some`, len(a.Entries), MaxPlanEntries)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf(`"entries" must be a list: %v`, err)
	}
	names := argNames(&PlanEntryArgs{})
	var errs []error
	for i, e := range a.Entries {
		at := func(err error) error {
			if err == nil {
				return nil
			}
			return fmt.Errorf("entry %d: %w", i+1, err)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(items[i], &obj) != nil || obj == nil {
			errs = append(errs, at(errors.New("must be an object with content, status and priority")))
			continue
		}
		errs = append(errs, at(checkKeys(items[i], names)))
		switch n := utf8.RuneCountInString(e.Content); {
		case strings.TrimSpace(e.Content) == "":
			errs = append(errs, at(errors.New(`"content" is required`)))
		case n > MaxPlanEntryRunes:
			errs = append(errs, at(fmt.Errorf(`"content" is %d characters long; the limit is %d`, n, MaxPlanEntryRunes)))
		case strings.ContainsAny(e.Content, "\n\r"):
			errs = append(errs, at(errors.New(`"content" must be one line`)))
		}
		if !slices.Contains(strings.Split(planEntryStatuses, ", "), e.Status) {
			errs = append(errs, at(fmt.Errorf(`"status" is %q; it must be one of %s`, short(e.Status), planEntryStatuses)))
		}
		if !slices.Contains(strings.Split(planEntryPriorities, ", "), e.Priority) {
			errs = append(errs, at(fmt.Errorf(`"priority" is %q; it must be one of %s`, short(e.Priority), planEntryPriorities)))
		}
		if len(errs) > 2*maxKeyProblems {
			break
		}
	}
	return joinErrs(errs...)
}

// jsonProblem describes a JSON syntax error briefly.
func jsonProblem(err error) string {
	if err == nil {
		return "got null"
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return "got a JSON " + te.Value
	}
	return err.Error()
}

// jsonType names a Go type as the model knows it, in JSON terms.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct:
		return "an object"
	case reflect.Slice:
		return "a list"
	}
	return "a " + t.String()
}

// joinErrs joins the non-nil errors into one line, so that the model sees
// every problem with its call at once.
func joinErrs(errs ...error) error {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ACP tool kinds used by Rebound's tools.
const (
	KindRead    = "read"
	KindEdit    = "edit"
	KindSearch  = "search"
	KindExecute = "execute"
	KindOther   = "other"
)

// maxTitleText is where a command or pattern is cut in a title.
const maxTitleText = 80

// Info is what the editor shows about a tool call before and while it runs.
type Info struct {
	Kind      string   // ACP ToolKind: read, edit, search, execute
	Title     string   // e.g. "Read `README.md` (lines 10–40)"
	Locations []string // absolute paths the call touches, for follow-along
	Mutates   bool     // changes files or runs programs, so needs permission
}

// Describe returns the editor-facing Info of a parsed call (what Parse
// returns). It does not touch the file system: paths are shown relative to
// the working directory when inside it, and located by their absolute form
// even when Resolve will later refuse them.
func Describe(ws *Workspace, args any) Info {
	switch a := args.(type) { // accept values as well as Parse's pointers
	case ReadFileArgs:
		args = &a
	case WriteFileArgs:
		args = &a
	case EditFileArgs:
		args = &a
	case FindFilesArgs:
		args = &a
	case SearchFilesArgs:
		args = &a
	case RunCommandArgs:
		args = &a
	case UpdatePlanArgs:
		args = &a
	}
	switch a := args.(type) {
	case *ReadFileArgs:
		title := "Read " + code(ws.Rel(a.Path))
		switch {
		case a.Limit > 0:
			first := max(a.Offset, 1)
			title += fmt.Sprintf(" (lines %d–%d)", first, first+a.Limit-1)
		case a.Offset > 1:
			title += fmt.Sprintf(" (from line %d)", a.Offset)
		}
		return Info{Kind: KindRead, Title: title, Locations: []string{ws.Abs(a.Path)}}
	case *WriteFileArgs:
		return Info{Kind: KindEdit, Title: "Write " + code(ws.Rel(a.Path)), Locations: []string{ws.Abs(a.Path)}, Mutates: true}
	case *EditFileArgs:
		return Info{Kind: KindEdit, Title: "Edit " + code(ws.Rel(a.Path)), Locations: []string{ws.Abs(a.Path)}, Mutates: true}
	case *FindFilesArgs:
		return Info{Kind: KindSearch, Title: "Find " + code(short(a.Glob)) + in(ws, a.Path), Locations: loc(ws, a.Path)}
	case *SearchFilesArgs:
		title := "Search " + code(short(a.Pattern)) + in(ws, a.Path)
		if a.Glob != "" {
			title += " (" + code(short(a.Glob)) + ")"
		}
		return Info{Kind: KindSearch, Title: title, Locations: loc(ws, a.Path)}
	case *RunCommandArgs:
		return Info{Kind: KindExecute, Title: "Run " + code(short(a.Command)) + in(ws, a.Cwd), Mutates: true}
	case *UpdatePlanArgs:
		return Info{Kind: KindOther, Title: "Update plan"}
	}
	return Info{Kind: KindOther, Title: fmt.Sprintf("Unknown tool call (%T)", args)}
}

// CodeSpan is s as a Markdown code span, fenced with more backticks than
// any run inside it so a backtick in a command cannot end the span early.
func CodeSpan(s string) string { return code(s) }

func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if fence == "`" {
		return fence + s + fence
	}
	return fence + " " + s + " " + fence
}

// in names a directory argument, if one was given.
func in(ws *Workspace, dir string) string {
	if dir == "" {
		return ""
	}
	return " in " + code(ws.Rel(dir))
}

func loc(ws *Workspace, path string) []string {
	if path == "" {
		return nil
	}
	return []string{ws.Abs(path)}
}

// short fits s on one title line: only its first line, at most maxTitleText
// characters, with … where something was left out.
func short(s string) string {
	s = strings.TrimSpace(s)
	first, rest, multiline := strings.Cut(s, "\n")
	first = strings.TrimRight(first, " \t\r")
	cut := multiline && strings.TrimSpace(rest) != ""
	if utf8.RuneCountInString(first) > maxTitleText {
		first = string([]rune(first)[:maxTitleText-1])
		cut = true
	}
	if cut {
		return strings.TrimRight(first, " \t") + "…"
	}
	return first
}

package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/agent/tools/shell"
)

// ACP tool kinds used by Rebound's tools.
const (
	KindRead    = "read"
	KindEdit    = "edit"
	KindSearch  = "search"
	KindExecute = "execute"
	KindOther   = "other"
)

// maxTitleText is where a pattern is cut in a title, and the longest
// command or arguments a title shows on its own line.
const maxTitleText = 80

// A title shows a command or an MCP call's arguments whole, in a code block
// under its first line, up to these bounds; past them it shows the
// beginning and says plainly that the rest is not shown and where it is.
const (
	maxTitleBlockRunes = 4000
	maxTitleBlockLines = 100
)

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
		title := "Read " + PathSpan(ws.Rel(a.Path))
		switch {
		case a.Limit > 0:
			first := max(a.Offset, 1)
			title += fmt.Sprintf(" (lines %d–%d)", first, first+a.Limit-1)
		case a.Offset > 1:
			title += fmt.Sprintf(" (from line %d)", a.Offset)
		}
		return Info{Kind: KindRead, Title: title, Locations: []string{ws.Abs(a.Path)}}
	case *WriteFileArgs:
		return Info{Kind: KindEdit, Title: "Write " + PathSpan(ws.Rel(a.Path)), Locations: []string{ws.Abs(a.Path)}, Mutates: true}
	case *EditFileArgs:
		return Info{Kind: KindEdit, Title: "Edit " + PathSpan(ws.Rel(a.Path)), Locations: []string{ws.Abs(a.Path)}, Mutates: true}
	case *FindFilesArgs:
		return Info{Kind: KindSearch, Title: "Find " + PathSpan(short(a.Glob)) + in(ws, a.Path), Locations: loc(ws, a.Path)}
	case *SearchFilesArgs:
		title := "Search " + PathSpan(short(a.Pattern)) + in(ws, a.Path)
		if a.Glob != "" {
			title += " (" + PathSpan(short(a.Glob)) + ")"
		}
		return Info{Kind: KindSearch, Title: title, Locations: loc(ws, a.Path)}
	case *RunCommandArgs:
		where := ""
		if a.Cwd != "" {
			where = ws.Rel(a.Cwd)
		}
		return Info{Kind: KindExecute, Title: CommandTitle(a.Command, where), Mutates: true}
	case *UpdatePlanArgs:
		return Info{Kind: KindOther, Title: "Update plan"}
	}
	return Info{Kind: KindOther, Title: fmt.Sprintf("Unknown tool call (%T)", args)}
}

// PathSpan is a path, a name or a pattern as a code span on one line, its
// hidden characters (newlines too) made visible.
func PathSpan(s string) string {
	s, _ = VisibleLine(s)
	return code(s)
}

// CommandTitle is the title of a command run in dir ("" leaves the
// directory out): the whole command on the title's one line when it fits
// there, else the whole command in a code block (in the platform's shell
// language) under a first line that says so; past maxTitleBlockRunes or
// maxTitleBlockLines, its beginning and a plain word that the rest is not
// shown and where it is. A title-only
// client (one that shows a permission request's title and not its content)
// thus shows what runs, or says that it does not.
func CommandTitle(command, dir string) string {
	where := ""
	if dir != "" {
		where = " in " + PathSpan(dir)
	}
	return wholeTitle(func(span string) string { return "Run " + span + where }, "Run this command"+where, "command", shell.Platform.Lang, command)
}

// MCPTitle is the title of a permission request for an MCP call: the tool,
// its server and its arguments (the JSON sent), shown as CommandTitle shows
// a command.
func MCPTitle(server, tool string, input json.RawMessage) string {
	lead := "Call " + PathSpan(tool) + " of the MCP server " + PathSpan(server)
	text := string(input)
	if shown, hidden := Visible(text); hidden || utf8.RuneCountInString(shown) > maxTitleText {
		var pretty bytes.Buffer
		if json.Indent(&pretty, input, "", "  ") == nil {
			text = pretty.String() // one argument a line, in the block
		}
	}
	return wholeTitle(func(span string) string { return lead + " with " + span }, lead+" with these arguments", "arguments", "json", text)
}

// wholeTitle shows text (what noun names) whole: inline(span) when it is
// one short line with nothing hidden, else block, a colon and a code block.
func wholeTitle(inline func(span string) string, block, noun, lang, text string) string {
	text = strings.TrimRight(text, "\n") // ends of lines at the end change nothing
	shown, hidden := Visible(text)
	if !hidden && !strings.Contains(shown, "\n") && utf8.RuneCountInString(shown) <= maxTitleText {
		return inline(code(shown))
	}
	var b strings.Builder
	b.WriteString(block)
	if lines := strings.Count(text, "\n") + 1; lines > 1 {
		fmt.Fprintf(&b, " (%d lines)", lines)
	}
	if hidden {
		b.WriteString("; it holds invisible or control characters, each shown as ⟨U+…⟩")
	}
	head, cut := cutShown(shown)
	if cut {
		fmt.Fprintf(&b, ". Only the first %d of its %d characters are shown here: the whole %s is in this request's details (its content and raw input); reject it if your editor does not show them", utf8.RuneCountInString(head), utf8.RuneCountInString(shown), noun)
	}
	b.WriteString(":\n")
	b.WriteString(CodeBlock(lang, head))
	if cut {
		b.WriteString("\n[the rest is not shown here]")
	}
	return b.String()
}

// cutShown is the beginning of shown that a title holds: whole lines up to
// maxTitleBlockLines and maxTitleBlockRunes, or the first
// maxTitleBlockRunes characters of a longer first line.
func cutShown(shown string) (string, bool) {
	if utf8.RuneCountInString(shown) <= maxTitleBlockRunes && strings.Count(shown, "\n") < maxTitleBlockLines {
		return shown, false
	}
	end, runes := 0, 0
	for range maxTitleBlockLines {
		nl := strings.IndexByte(shown[end:], '\n')
		if nl < 0 {
			break // the last line, which does not fit, or it would all have
		}
		n := utf8.RuneCountInString(shown[end : end+nl+1])
		if runes+n > maxTitleBlockRunes {
			break
		}
		runes += n
		end += nl + 1
	}
	if end == 0 {
		head := string([]rune(shown)[:maxTitleBlockRunes])
		if i := strings.LastIndex(head, "⟨"); i > strings.LastIndex(head, "⟩") {
			head = head[:i] // not half an escape
		}
		return head, true
	}
	return shown[:end-1], true
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
	return " in " + PathSpan(ws.Rel(dir))
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

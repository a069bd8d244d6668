package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
)

// What a person approves must be exactly what runs: a permission request
// shows the whole of it (a command and its directory, an MCP call's
// arguments) in the request's content, never only a title cut to one line,
// and its rawInput is the decoded input that runs, never the model's text,
// which may say one thing to a reader and another to the decoder.

// approval is what one permission request asks about.
type approval struct {
	// scope is what a standing answer covers: scopeEdits, a command in a
	// directory, or one MCP tool.
	scope string
	// preview is shown whole in the request: the diff, the command, the
	// arguments.
	preview []acp.ToolCallContent
	// input is the request's rawInput: what runs, decoded.
	input json.RawMessage
	// protected, when set, says why this call asks in every mode but
	// full_access, whatever was answered before: it writes where a program
	// could be made to run. No standing answer is offered for it.
	protected string
}

// commandScope is what "always allow this command" covers: the command line
// and the directory it runs in, since the same line runs another program
// elsewhere (./build.sh in vendor/evil).
func commandScope(command, dir string) string {
	return tools.RunCommand + ":" + strconv.Quote(dir) + " " + command
}

// commandPreview shows a command whole, as it will run.
func commandPreview(command, dir string) []acp.ToolCallContent {
	shown, hidden := visible(command)
	text := "Runs with `sh -c` in " + mdCode(dir) + ":\n" + codeBlock("sh", shown)
	if hidden {
		text += "\n" + hiddenNote
	}
	return []acp.ToolCallContent{acp.ContentText(text)}
}

// mcpPreview shows an MCP call whole: the server, the tool and every
// argument as they are sent.
func mcpPreview(server, tool string, input json.RawMessage) []acp.ToolCallContent {
	var pretty bytes.Buffer
	if json.Indent(&pretty, input, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(input)
	}
	shown, hidden := visible(pretty.String())
	text := "Calls " + mdCode(tool) + " of the MCP server " + mdCode(server) + " with these arguments:\n" + codeBlock("json", shown)
	if hidden {
		text += "\n" + hiddenNote
	}
	return []acp.ToolCallContent{acp.ContentText(text)}
}

// protectedNote is the line a protected write's request adds to its diff.
func protectedNote(why string) acp.ToolCallContent {
	return acp.ContentText("Rebound always asks before this write, in every mode but full access: " + why + ".")
}

const hiddenNote = "Careful: this contains invisible or control characters, shown above as ⟨U+…⟩; they are part of what runs."

// visible replaces the characters that could make text read differently
// from what runs (control characters other than newline and tab, bidi
// overrides, zero-width and other format characters) with ⟨U+XXXX⟩, and
// reports whether there were any.
func visible(s string) (string, bool) {
	hidden := false
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || r == '\t' || !(unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar || unicode.In(r, unicode.Zl, unicode.Zp)) {
			b.WriteRune(r)
			continue
		}
		hidden = true
		fmt.Fprintf(&b, "⟨U+%04X⟩", r)
	}
	return b.String(), hidden
}

// codeBlock fences s as a Markdown code block whose fence no run of
// backticks inside s can close.
func codeBlock(lang, s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}

// mdCode is s, its hidden characters made visible, as a Markdown code span
// that no backtick inside it can end.
func mdCode(s string) string {
	s, _ = visible(s)
	return tools.CodeSpan(s)
}

// shownInput is a tool call's rawInput for the editor: the arguments as
// decoded for the call, or nothing when they cannot be decoded (nothing
// runs then).
func shownInput(name, arguments string) json.RawMessage {
	if args, err := tools.Parse(name, arguments); err == nil {
		return tools.Canonical(args)
	}
	if strings.HasPrefix(name, "mcp__") {
		if in, err := canonicalObject(arguments); err == nil {
			return in
		}
	}
	return nil
}

// canonicalObject decodes an MCP call's arguments (a JSON object; empty is
// {}) and encodes them again, so that what is shown and what is sent are
// one value: a key given twice at the top is an error for the model, since
// a reader sees the first and a decoder may take the last; deeper repeats
// collapse to the value the encoding keeps, in the preview and the call
// alike.
func canonicalObject(arguments string) (json.RawMessage, error) {
	if strings.TrimSpace(arguments) == "" {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(strings.NewReader(arguments))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("the arguments must be one JSON object, such as {\"name\": \"value\"}")
	}
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
		}
		key := tok.(string) // inside an object, a token here is a key
		if _, dup := obj[key]; dup {
			return nil, fmt.Errorf("the argument %q is given twice; give each argument once", key)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
		}
		obj[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the arguments must be one JSON object, with nothing after it")
	}
	return tools.Canonical(obj), nil
}

package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
)

// Bounds on what a server can put in front of the model. A server is an
// untrusted peer: without them one server could fill the context window or
// make every request to the provider fail.
const (
	MaxServers        = 32        // servers started per Set
	MaxToolsPerServer = 128       // tools kept per server; the rest are dropped
	MaxDescription    = 2 << 10   // bytes of a tool's description
	MaxSchema         = 64 << 10  // bytes of a tool's input schema; larger ones are skipped
	MaxResult         = 256 << 10 // bytes of a call's result text; head and tail are kept
	MaxArguments      = 1 << 20   // bytes of the model's arguments for one call
	MaxToolName       = 64        // OpenAI: ^[a-zA-Z0-9_-]{1,64}$
)

// maxErrorShown bounds text from a server quoted in an error.
const maxErrorShown = 2 << 10

// namePrefix marks MCP tools. Rebound's own tools have no double underscore,
// so no MCP tool can take one of their names.
const namePrefix = "mcp__"

// sanitize replaces every character the providers reject in a tool name with
// '_', one per rune, so the result is ASCII.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// namer hands out the model-facing names of one Set's tools.
type namer struct{ taken map[string]bool }

// name returns mcp__<server>__<tool>, sanitised. A name that is too long or
// already taken (two names can sanitise alike) is cut and given a suffix
// hashed from the original names, so it is the same in every session that
// offers the same tools in the same order: the model's history stays valid
// across session/load.
func (n *namer) name(server, tool string) string {
	if n.taken == nil {
		n.taken = make(map[string]bool)
	}
	base := namePrefix + sanitize(server) + "__" + sanitize(tool)
	if len(base) <= MaxToolName && !n.taken[base] {
		n.taken[base] = true
		return base
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	hash := hex.EncodeToString(sum[:4])
	for i := 0; ; i++ {
		suffix := "_" + hash
		if i > 0 {
			suffix = fmt.Sprintf("_%s_%d", hash, i)
		}
		name := base[:min(len(base), MaxToolName-len(suffix))] + suffix
		if !n.taken[name] {
			n.taken[name] = true
			return name
		}
	}
}

// toolDef turns a server's tool into what the model is offered, or says why
// the tool is skipped. The description is capped; the schema must be a JSON
// object of at most MaxSchema bytes whose type, if given, is "object", since
// the providers reject a whole request over one bad schema.
func toolDef(name string, t *sdk.Tool) (llm.ToolDef, error) {
	if t.Name == "" {
		return llm.ToolDef{}, errors.New("the tool has no name")
	}
	params, err := json.Marshal(t.InputSchema)
	if err != nil {
		return llm.ToolDef{}, fmt.Errorf("its input schema cannot be encoded: %w", err)
	}
	if len(params) > MaxSchema {
		return llm.ToolDef{}, fmt.Errorf("its input schema has %d bytes, more than the %d allowed", len(params), MaxSchema)
	}
	var schema map[string]any
	if err := json.Unmarshal(params, &schema); err != nil || schema == nil {
		return llm.ToolDef{}, errors.New("its input schema is not a JSON object")
	}
	switch typ, ok := schema["type"]; {
	case !ok:
		schema["type"] = "object"
		if params, err = json.Marshal(schema); err != nil {
			return llm.ToolDef{}, fmt.Errorf("its input schema cannot be encoded: %w", err)
		}
	case typ != "object":
		return llm.ToolDef{}, fmt.Errorf("its input schema has type %s, not \"object\"", printable(fmt.Sprint(typ), 64))
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	desc = strings.ToValidUTF8(desc, "\uFFFD")
	if len(desc) > MaxDescription {
		desc = text.Prefix(desc, MaxDescription-len("…")) + "…"
	}
	return llm.ToolDef{Name: name, Description: desc, Parameters: params}, nil
}

// checkArguments returns the model's arguments as the JSON object to send,
// or a message telling the model what to fix. Empty arguments mean {}: models
// send them for tools without parameters.
func checkArguments(args string) (json.RawMessage, string) {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}"), ""
	}
	if len(args) > MaxArguments {
		return nil, fmt.Sprintf("The arguments have %d bytes, more than the %d allowed. Pass less data in one call.", len(args), MaxArguments)
	}
	const want = "The arguments must be a JSON object, such as {\"name\": \"value\"}"
	if !json.Valid([]byte(args)) {
		var v any
		err := json.Unmarshal([]byte(args), &v) // only for its description of the fault
		return nil, fmt.Sprintf("%s; they are not valid JSON: %v.", want, err)
	}
	if args[0] != '{' {
		return nil, fmt.Sprintf("%s; they are a JSON %s.", want, jsonKind(args[0]))
	}
	return json.RawMessage(args), ""
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// resultText renders a call's content for the model: text as it is, other
// content described in brackets, capped at MaxResult with head and tail
// kept. A result with no content but structured content shows that as JSON.
func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *sdk.TextContent:
			b.WriteString(c.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[image: %s, %d bytes]", mimeOr(c.MIMEType), len(c.Data))
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio: %s, %d bytes]", mimeOr(c.MIMEType), len(c.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource link: %s]", describeResource(c.URI, c.Name, c.MIMEType))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				b.WriteString("[empty resource]")
			case r.Blob != nil:
				fmt.Fprintf(&b, "[resource: %s, %d bytes]", describeResource(r.URI, "", r.MIMEType), len(r.Blob))
			default:
				fmt.Fprintf(&b, "[resource: %s]\n%s", describeResource(r.URI, "", r.MIMEType), r.Text)
			}
		case nil:
		default:
			fmt.Fprintf(&b, "[%T content]", c)
		}
		if b.Len() > 4*MaxResult { // enough for head and tail; the rest is cut anyway
			break
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(data)
		}
	}
	return headTail(strings.ToValidUTF8(b.String(), "\uFFFD"), MaxResult)
}

func mimeOr(m string) string {
	if m == "" {
		return "unknown type"
	}
	return printable(m, 100)
}

func describeResource(uri, name, mime string) string {
	s := printable(uri, 500)
	if name != "" {
		s += " " + printable(name, 200)
	}
	if mime != "" {
		s += " (" + printable(mime, 100) + ")"
	}
	return s
}

// headTail keeps the first and last parts of s when it is longer than max
// bytes: the start of a long output says what it is, the end how it ended.
func headTail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const markFmt = "\n[... %d bytes omitted ...]\n"
	room := max - len(fmt.Sprintf(markFmt, len(s)))
	head := text.Prefix(s, room/2)
	tailStart := len(s) - (room - len(head))
	for tailStart < len(s) && !utf8.RuneStart(s[tailStart]) {
		tailStart++
	}
	return head + fmt.Sprintf(markFmt, tailStart-len(head)) + s[tailStart:]
}

// errorText quotes an error that may carry a server's words: bounded and
// printable.
func errorText(err error) string {
	return printable(headTail(err.Error(), maxErrorShown), maxErrorShown+len("…"))
}

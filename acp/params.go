package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"unicode"

	"github.com/sourcegraph/jsonrpc2"
)

// decodeParams unmarshals req's params into v. Missing or null params are an
// error when required; a type error names the field.
func decodeParams(req *jsonrpc2.Request, v any, required bool) error {
	if req.Params == nil || string(*req.Params) == "null" {
		if required {
			return NewInvalidParams("params are required")
		}
		return nil
	}
	return decodeJSON(*req.Params, v, "")
}

// decodeJSON unmarshals raw into v; path is where raw sits in the params
// ("" for the params themselves, "prompt[2]" for a block).
func decodeJSON(raw []byte, v any, path string) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	e := NewInvalidParams("%s", describeJSONError(err, path, "params"))
	e.Err = err
	return e
}

// describeJSONError says what is wrong with a value json.Unmarshal refused.
// A type error names the member: path is where the value sits ("" for the
// top), top names the top ("params", "result").
func describeJSONError(err error, path, top string) string {
	te, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return err.Error()
	}
	field := te.Field
	switch {
	case path != "" && field != "":
		field = path + "." + field
	case path != "":
		field = path
	case field == "":
		field = top
	}
	return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(te.Type), te.Value)
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a valid " + t.String()
}

// MaxSessionIDBytes bounds a session id. The ids Rebound gives out are
// "sess_" and 32 hex digits; its session logs are named after them, which
// allows 1 to 128 ASCII letters, digits, '-' and '_'.
const MaxSessionIDBytes = 128

// checkSessionID refuses, with -32602, a session id no session can have,
// before it reaches the agent, quoting at most a short prefix of it.
func checkSessionID(id string) error {
	if id == "" {
		return NewInvalidParams("sessionId is required")
	}
	ok := len(id) <= MaxSessionIDBytes
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return NewInvalidParams("sessionId %s is not a session id (1 to %d letters, digits, '-' or '_')", quote(id), MaxSessionIDBytes)
	}
	return nil
}

// checkWorkspace checks what session/new, load and resume share: where
// the session works and the MCP servers it uses.
func checkWorkspace(cwd string, additional []string, servers []McpServer) error {
	if err := checkCwd(cwd, additional); err != nil {
		return err
	}
	return checkMcpServers(servers)
}

// checkWorkspaceDefault is checkWorkspace for session/new and load, which
// then give a missing mcpServers, required by the schema, its empty default:
// nothing is lost by one.
func checkWorkspaceDefault(cwd string, additional []string, servers *[]McpServer) error {
	if err := checkWorkspace(cwd, additional, *servers); err != nil {
		return err
	}
	if *servers == nil {
		*servers = []McpServer{}
	}
	return nil
}

// Bounds of a session's directories: each goes into the instructions of
// every model request, the session's log and index and session/list's
// answers. A path longer than Linux's PATH_MAX names no directory.
const (
	maxAdditionalDirectories = 64
	maxDirectoryBytes        = 4096
)

// checkCwd checks the session's directories: tools resolve paths against
// them, so they must be absolute.
func checkCwd(cwd string, additional []string) error {
	if cwd == "" {
		return NewInvalidParams("cwd is required")
	}
	if err := checkDirectory("cwd", cwd); err != nil {
		return err
	}
	if len(additional) > maxAdditionalDirectories {
		return NewInvalidParams("additionalDirectories has %d entries; at most %d", len(additional), maxAdditionalDirectories)
	}
	for i, d := range additional {
		if err := checkDirectory(fmt.Sprintf("additionalDirectories[%d]", i), d); err != nil {
			return err
		}
	}
	return nil
}

// checkDirectory checks one of the session's directories: an absolute
// path, bounded, with no control character (a newline in it would start a
// line of its own in the model's instructions).
func checkDirectory(field, d string) error {
	switch {
	case len(d) > maxDirectoryBytes:
		return NewInvalidParams("%s is longer than %d bytes", field, maxDirectoryBytes)
	case strings.ContainsFunc(d, unicode.IsControl):
		return NewInvalidParams("%s holds a control character: %s", field, quote(d))
	case !filepath.IsAbs(d):
		return NewInvalidParams("%s must be an absolute path, got %s", field, quote(d))
	}
	return nil
}

// decodePrompt reads session/prompt params, block by block so an error can
// name the block's index (encoding/json's field paths have none).
func decodePrompt(req *jsonrpc2.Request) (PromptRequest, error) {
	var p struct {
		SessionID string            `json:"sessionId"`
		Prompt    []json.RawMessage `json:"prompt"`
		Meta      Meta              `json:"_meta,omitempty"`
	}
	if err := decodeParams(req, &p, true); err != nil {
		return PromptRequest{}, err
	}
	if err := checkSessionID(p.SessionID); err != nil {
		return PromptRequest{}, err
	}
	if p.Prompt == nil {
		return PromptRequest{}, NewInvalidParams("prompt is required")
	}
	blocks := make([]ContentBlock, len(p.Prompt))
	for i, raw := range p.Prompt {
		path := fmt.Sprintf("prompt[%d]", i)
		if err := decodeJSON(raw, &blocks[i], path); err != nil {
			return PromptRequest{}, err
		}
		if err := checkBlock(blocks[i], path); err != nil {
			return PromptRequest{}, err
		}
	}
	return PromptRequest{SessionID: p.SessionID, Prompt: blocks, Meta: p.Meta}, nil
}

// checkBlock checks the members a block's type requires and that can be
// told apart from empty. image and audio are accepted here although not
// advertised: whether to use them is the agent's call.
func checkBlock(b ContentBlock, path string) error {
	switch b.Type {
	case "":
		return NewInvalidParams("%s.type is required", path)
	case "text", "image", "audio":
	case "resource_link":
		if b.URI == "" {
			return NewInvalidParams("%s.uri is required", path)
		}
		if b.Name == "" {
			return NewInvalidParams("%s.name is required", path)
		}
	case "resource":
		switch {
		case b.Resource == nil:
			return NewInvalidParams("%s.resource is required", path)
		case b.Resource.URI == "":
			return NewInvalidParams("%s.resource.uri is required", path)
		case b.Resource.Text == nil && b.Resource.Blob == nil:
			return NewInvalidParams("%s.resource needs text or blob", path)
		}
	default:
		return NewInvalidParams("%s.type %s is not a content block type (text, image, audio, resource_link, resource)", path, quote(b.Type))
	}
	return nil
}

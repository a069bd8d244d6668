package acp

import (
	"encoding/json"
	"errors"
	"reflect"
)

// refusal is the error answer to a line that is not read as a message: a
// JSON-RPC error code, its message, and the id to answer with (nil: null).
// A zero code means no answer: the line was a response, and JSON-RPC
// forbids answering those; msg then says what was wrong, for the log.
type refusal struct {
	code int
	msg  string
	id   json.RawMessage
}

// decode fills v from one trimmed, non-empty line, or says why it can't.
//
// Before jsonrpc2 sees a request, its id is checked and, if jsonrpc2
// would not carry it back unchanged, substituted in ids (see idPrefix).
func decode(line []byte, v any, ids *idTable) (ok bool, r refusal) {
	if line[0] != '{' {
		return false, refuseNonObject(line)
	}
	// The members as jsonrpc2.Request reads them: exact names, the last of
	// repeated ones. (Struct fields would match names in any case.)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return false, refusal{code: CodeParseError, msg: "Parse error: " + err.Error()}
	}
	rawID, hasID := m["id"]
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	isResponse := !hasMethod && (hasResult || len(m["error"]) > 0 && string(m["error"]) != "null")
	var sub uint64 // the substitute id's number, 0 if none
	if hasID && hasMethod {
		if msg := checkID(rawID); msg != "" {
			return false, refusal{code: CodeInvalidRequest, msg: msg}
		}
		if !carriedAsIs(rawID) {
			sub = ids.substitute(rawID)
			m["id"] = substituteJSON(sub)
			line, _ = json.Marshal(m) // cannot fail: every member was just decoded
		}
	}
	// A failed decode may have filled parts of v (jsonrpc2's message type
	// sets its request or response half first); the next line must start
	// from zero or it could be taken for the wrong kind of message.
	reflect.ValueOf(v).Elem().SetZero()
	err := json.Unmarshal(line, v)
	if err == nil {
		return true, refusal{}
	}
	reflect.ValueOf(v).Elem().SetZero()
	if sub != 0 {
		ids.take(sub)
	}
	return false, refuseUndecoded(err, isResponse, hasID, rawID)
}

// refuseNonObject says why a line that does not start with '{' is refused.
func refuseNonObject(line []byte) refusal {
	var raw json.RawMessage
	switch err := json.Unmarshal(line, &raw); {
	case err != nil:
		return refusal{code: CodeParseError, msg: "Parse error: " + err.Error()}
	case line[0] == '[':
		return refusal{code: CodeInvalidRequest, msg: "Invalid Request: batches are not supported"}
	default:
		return refusal{code: CodeInvalidRequest, msg: "Invalid Request: a message must be a JSON object"}
	}
}

// refuseUndecoded says why an object jsonrpc2's message type would not take
// (err) is refused: a response is only logged, never answered.
func refuseUndecoded(err error, isResponse, hasID bool, rawID json.RawMessage) refusal {
	if isResponse {
		return refusal{msg: err.Error()}
	}
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return refusal{code: CodeParseError, msg: "Parse error: " + err.Error()}
	}
	r := refusal{code: CodeInvalidRequest, msg: "Invalid Request: " + err.Error()}
	if hasID && checkID(rawID) == "" {
		r.id = rawID // the spec says null unless the id could be detected
	}
	return r
}

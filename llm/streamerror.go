package llm

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// In-stream error frames, part of how a stream ends (streamend.go): the
// provider's error sent after it answered 200, in any of the framings
// providers and gateways use. Where the frame carries an HTTP status of its
// own, the *Error's Status is that status, so the error is classified as
// its HTTP equivalent would be (a 429 in the stream is a rate limit, not a
// server error).
//
// The framings, each recognised in the stage its framing belongs to:
//
//	data: {"error":{"code":429,"message":…}}       OpenAI-style, nested (go-openai swallows it; sse.go keeps it)
//	data: {"error":"text"}                           a bare string
//	data: {"code":…,"message":…}                     flat (decode.go, isErrorEvent)
//	data: {"object":"error","code":400,…}            vLLM
//	data: {"type":"error","error":{"type":…}}        Anthropic's, through gateways
//	event: error + data: …                           an error event, JSON or text (sse.go, errorEvent)
//	: HTTP_STATUS/429                                a gateway's comment giving the upstream status (sse.go)

// statusKeys are the members that may carry an HTTP status: the code
// itself (numeric or a numeric string) or a status of its own.
var statusKeys = [...]string{"code", "status", "status_code", "statusCode", "http_status", "httpStatus", "http_code"}

// frameStatus returns the HTTP status an error frame carries, from 400 to
// 599, or 0: the nested error object's first, then the frame's own.
func frameStatus(payload []byte) int {
	payload = bytes.TrimSpace(payload)
	if len(payload) > 0 && payload[0] == '[' { // Google's array of one
		var arr []json.RawMessage
		if json.Unmarshal(payload, &arr) != nil || len(arr) == 0 {
			return 0
		}
		payload = arr[0]
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(payload, &top) != nil {
		return 0
	}
	var inner map[string]json.RawMessage
	if raw, ok := top["error"]; ok && json.Unmarshal(raw, &inner) == nil {
		if s := statusIn(inner); s != 0 {
			return s
		}
	}
	return statusIn(top)
}

func statusIn(m map[string]json.RawMessage) int {
	for _, k := range statusKeys {
		if s := httpStatus(m[k]); s != 0 {
			return s
		}
	}
	return 0
}

// httpStatus reads a JSON number, or a string that is a status or starts
// with one ("429", "429 Too Many Requests"), from 400 to 599.
func httpStatus(raw json.RawMessage) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 1 && raw[0] == '"' {
		raw = raw[1 : len(raw)-1]
		if len(raw) > 3 && raw[3] == ' ' {
			raw = raw[:3]
		}
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 400 || n > 599 {
		return 0
	}
	return n
}

// errorTypeOf reads TGI's error_type ({"error":"…","error_type":"overloaded"}),
// the one place it names the kind of error.
func errorTypeOf(payload []byte) string {
	var top struct {
		ErrorType json.RawMessage `json:"error_type"`
	}
	if json.Unmarshal(payload, &top) != nil {
		return ""
	}
	return jsonString(top.ErrorType)
}

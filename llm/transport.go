package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// HTTPDoer is the one method the adapter needs from an HTTP client. It is
// go-openai's HTTPDoer, so *http.Client and the in-memory mock both fit.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// maxCapture bounds what is kept of an error body, an in-stream error event
// or non-SSE text in a 2xx body: enough for any provider's error JSON, small
// enough that a misbehaving proxy cannot make us hold megabytes of HTML.
const maxCapture = 64 << 10

// captureKey carries the per-attempt *capture from Stream to captureDoer
// through the request context, so one go-openai client serves all attempts.
type captureKey struct{}

// capture is what the HTTP layer saw for one attempt. go-openai drops the
// status, the headers and the raw body of failures; we keep them here.
type capture struct {
	status int
	header http.Header
	body   []byte  // error body (non-2xx), capped
	tap    *sseTap // 2xx body
	resp   *http.Response
	limits limits        // for the tap
	wire   *wireMessages // the request's messages, encoded (withMessages)
	prefix bool          // the last message is a reply continued in place
}

func (c *capture) requestID() string {
	if c.header == nil {
		return ""
	}
	for _, k := range []string{"X-Request-Id", "Request-Id", "X-Amzn-Requestid"} {
		if v := c.header.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// captureDoer wraps the caller's HTTPDoer. It is the only place that sees
// *http.Response, so it is where status, headers and bodies are recorded.
type captureDoer struct{ next HTTPDoer }

func (d captureDoer) Do(req *http.Request) (*http.Response, error) {
	c, _ := req.Context().Value(captureKey{}).(*capture)
	if c != nil && c.wire != nil {
		var err error
		if req, err = withMessages(req, c.wire); err != nil {
			return nil, err
		}
	}
	resp, err := d.next.Do(req)
	if err != nil || c == nil {
		if err == nil {
			limitBody(req, resp)
			teeBody(req, resp)
		}
		return resp, err
	}
	c.status = resp.StatusCode
	c.header = resp.Header.Clone()
	c.resp = resp
	if resp.StatusCode < 200 || resp.StatusCode >= 400 { // go-openai's isFailureStatusCode
		// Read the capped body now and close the original: go-openai reads
		// error bodies fully and never closes them.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxCapture))
		resp.Body.Close()
		c.body = body
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	c.tap = newTap(resp.Body, c.limits)
	resp.Body = c.tap
	return resp, nil
}

// errorFacts are the structured fields of a provider's error JSON.
type errorFacts struct {
	Code, Type, Param, Message, RequestID string
}

func (f errorFacts) empty() bool { return f.Code == "" && f.Type == "" && f.Message == "" }

// parseErrorFacts reads an error object in the shapes providers use:
//
//	{"error":{"message":..,"type":..,"code":..}}          OpenAI, nested
//	{"message":..,"type":..,"code":400}                     vLLM and others, flat
//	{"type":"error","error":{"type":"overloaded_error",..}} Anthropic
//	{"error":"text"}                                        bare string
//	[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}]  Gemini, in an array
//	{"success":false,"errors":[{"code":..,"message":..}]}  Cloudflare's API
//	{"base_resp":{"status_code":1002,"status_msg":..}}      MiniMax, with 200
//
// A code may be a string or a number; either way it becomes a string. The
// nested object wins; fields it lacks are taken from the top level. When
// there is no "type", a string "status" (Gemini) stands in for it.
func parseErrorFacts(body []byte) (errorFacts, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return errorFacts{}, false
		}
		body = arr[0]
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return errorFacts{}, false
	}
	var f errorFacts
	if raw, ok := top["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil && inner != nil {
			f = factsOf(inner)
		} else {
			f.Message = jsonText(raw)
		}
	} else if raw, ok := top["errors"]; ok {
		// Cloudflare's API envelope: {"success":false,"errors":[{code,message}]}.
		var list []map[string]json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 && list[0] != nil {
			f = factsOf(list[0])
		}
	} else if raw, ok := top["base_resp"]; ok {
		f = baseResp(raw)
	}
	flat := factsOf(top)
	if flat.Type == "error" && top["error"] != nil {
		flat.Type = "" // Anthropic's envelope type, not the error's
	}
	f.Code = cmp.Or(f.Code, flat.Code)
	f.Type = cmp.Or(f.Type, flat.Type)
	f.Param = cmp.Or(f.Param, flat.Param)
	f.Message = cmp.Or(f.Message, flat.Message)
	f.RequestID = cmp.Or(f.RequestID, flat.RequestID)
	return f, !f.empty()
}

// baseResp reads MiniMax's base_resp, {"status_code":1002,"status_msg":…},
// which it sends with HTTP 200 and no choices when a request failed, and
// with status_code 0 in every answer that did not. Its numbers are
// MiniMax's own: the type "base_resp" keeps them apart from other
// providers' numeric codes in the dialect table.
func baseResp(raw json.RawMessage) errorFacts {
	var br struct {
		StatusCode json.RawMessage `json:"status_code"`
		StatusMsg  json.RawMessage `json:"status_msg"`
	}
	if json.Unmarshal(raw, &br) != nil {
		return errorFacts{}
	}
	code := jsonText(br.StatusCode)
	if code == "" || code == "0" {
		return errorFacts{}
	}
	return errorFacts{Code: code, Type: "base_resp", Message: jsonText(br.StatusMsg)}
}

func factsOf(m map[string]json.RawMessage) errorFacts {
	f := errorFacts{
		Code:      jsonText(m["code"]),
		Type:      jsonString(m["type"]),
		Param:     jsonText(m["param"]),
		Message:   jsonText(m["message"]),
		RequestID: jsonString(m["request_id"]),
	}
	if f.Message == "" {
		f.Message = jsonString(m["detail"]) // FastAPI-style servers
	}
	if f.Type == "" {
		f.Type = jsonString(m["status"])
	}
	return f
}

// jsonString returns a JSON string's value, or "" for anything else.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonText renders a scalar as text: strings unquoted, numbers as written,
// arrays of strings joined (go-openai does the same for messages); null and
// objects give "".
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return jsonString(raw)
	case '[':
		var ss []string
		if json.Unmarshal(raw, &ss) == nil {
			return strings.Join(ss, ", ")
		}
		return ""
	case '{', 'n':
		return ""
	case 't', 'f':
		return string(raw)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		return n.String()
	}
	return ""
}

// snippet is a one-line, bounded excerpt of a body that is not error JSON
// (an HTML page from a proxy), good enough for a person to recognise it.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// withCapture returns ctx carrying a fresh capture for one attempt.
func withCapture(ctx context.Context, lim limits) (context.Context, *capture) {
	c := &capture{limits: lim}
	return context.WithValue(ctx, captureKey{}, c), c
}

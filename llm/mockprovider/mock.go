package mockprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// Created is the fixed "created" timestamp of every chunk, so transcripts
// do not depend on the clock.
const Created = 1700000000

// Mock answers chat completion requests from a Script. It is safe for
// concurrent use; requests consume steps in the order they arrive.
type Mock struct {
	mu     sync.Mutex
	script Script
	next   int
	reqs   []Recorded
	log    io.Writer
	// modelLists counts GET /models requests.
	modelLists int
	// The Bucket's current window: when it started and how many it served.
	windowStart time.Time
	windowUsed  int
}

var (
	_ llm.HTTPDoer = (*Mock)(nil)
	_ http.Handler = (*Mock)(nil)
)

// New returns a mock that plays script. A nil script answers every request
// with the "script exhausted" error. The script is copied.
func New(script *Script) *Mock {
	m := &Mock{}
	if script != nil {
		m.script = Script{Steps: append([]Step(nil), script.Steps...), Fallback: script.Fallback, StrictAlternation: script.StrictAlternation}
		if script.Models != nil { // [] is an empty list, nil none at all
			m.script.Models = append([]string{}, script.Models...)
		}
		m.script.ContextLengths = maps.Clone(script.ContextLengths)
		if script.Bucket != nil {
			b := *script.Bucket
			m.script.Bucket = &b
		}
	}
	return m
}

// Message is a request message as the mock decoded it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is recorded so tests can check it is not sent back.
	ReasoningContent string     `json:"reasoningContent,omitempty"`
	ToolCalls        []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID       string     `json:"toolCallId,omitempty"`
	// Images are the image parts of the content, as their media type (the
	// data itself is not kept).
	Images []string `json:"images,omitempty"`
	// Prefix: the request asked for this (last, assistant) message to be
	// continued in place ("prefix": true).
	Prefix bool `json:"prefix,omitempty"`
}

// Recorded is one request the mock received.
type Recorded struct {
	Seq       int       `json:"seq"` // 1 for the first request
	Time      time.Time `json:"time"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Model     string    `json:"model,omitempty"`
	Messages  []Message `json:"messages,omitempty"`
	MaxTokens int       `json:"maxTokens,omitempty"` // max_tokens, else max_completion_tokens
	// ReasoningEffort is the request's reasoning_effort.
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// Tools are the names of the functions offered (their schemas are not
	// kept).
	Tools        []string `json:"tools,omitempty"`
	Stream       bool     `json:"stream"`
	IncludeUsage bool     `json:"includeUsage,omitempty"`
	// Step is the index in Script.Steps that answered, or -1 (fallback,
	// exhausted script, or a request that was not a chat completion).
	Step      int  `json:"step"`
	Fallback  bool `json:"fallback,omitempty"`
	Exhausted bool `json:"exhausted,omitempty"`
	Status    int  `json:"status"` // the HTTP status the mock answered
	// Auth reports whether credentials were sent; their value never is
	// recorded.
	Auth   bool        `json:"auth"`
	Header http.Header `json:"header,omitempty"` // without credential headers
}

// ModelListRequests returns how many GET /models requests were received.
func (m *Mock) ModelListRequests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.modelLists
}

// Requests returns a copy of what was received so far, in arrival order.
func (m *Mock) Requests() []Recorded {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Recorded(nil), m.reqs...)
}

// Count returns how many requests were received.
func (m *Mock) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

// SetLog makes the mock write each received request to w as one JSON line
// (a Recorded). Credential headers are never written. Nil turns it off.
func (m *Mock) SetLog(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = w
}

// Do serves req in memory: an HTTPDoer for go-openai with no sockets, so
// it works inside a testing/synctest bubble. The body of a stream is a pipe
// fed by a goroutine that stops when req's context ends.
func (m *Mock) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err // as a real client would: nothing was sent
	}
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	rp := m.receive(req.Method, req.URL.Path, req.Header, body)
	if err := sleep(ctx, rp.delay); err != nil {
		return nil, err
	}
	resp := &http.Response{
		Status:        fmt.Sprintf("%d %s", rp.status, http.StatusText(rp.status)),
		StatusCode:    rp.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rp.header,
		Request:       req,
		ContentLength: -1,
	}
	if rp.events == nil {
		resp.Body = io.NopCloser(bytes.NewReader(rp.body))
		resp.ContentLength = int64(len(rp.body))
		return resp, nil
	}
	pr, pw := io.Pipe()
	go func() {
		// Cancellation closes the pipe with the context's error, which also
		// unblocks a Write the reader is not taking.
		stop := context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
		defer stop()
		pw.CloseWithError(rp.writeEvents(ctx, pw, func() {})) // nil: clean EOF
	}()
	resp.Body = pr
	return resp, nil
}

// ServeHTTP serves the same bytes as Do over real HTTP, flushing after every
// event. Only POST /v1/chat/completions and /chat/completions are served.
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	rp := m.receive(r.Method, r.URL.Path, r.Header, body)
	ctx := r.Context()
	if sleep(ctx, rp.delay) != nil {
		return
	}
	for k, v := range rp.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rp.status)
	if rp.events == nil {
		w.Write(rp.body)
		return
	}
	rc := http.NewResponseController(w)
	flush := func() { rc.Flush() }
	flush() // headers now: a client waiting on a stall must see the 200
	_ = rp.writeEvents(ctx, w, flush)
	// Returning ends the body cleanly: the client sees EOF, exactly as
	// with Do (including after drop_after).
}

// sleep waits d on a timer (fake time inside a synctest bubble), or until
// ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reply is the mock's whole answer to one request, decided on arrival.
type reply struct {
	status int
	header http.Header
	delay  time.Duration
	body   []byte // error replies

	// A stream: events written in order, chunkDelay before each event
	// marked delayed, then (stall) blocking until the request ends.
	events     []event
	chunkDelay time.Duration
	stall      bool
}

type event struct {
	data    []byte
	delayed bool
}

// writeEvents is the one writer of stream bodies, used by Do and
// ServeHTTP alike so the two transports cannot drift apart.
func (rp *reply) writeEvents(ctx context.Context, w io.Writer, flush func()) error {
	for _, ev := range rp.events {
		if ev.delayed {
			if err := sleep(ctx, rp.chunkDelay); err != nil {
				return err
			}
		}
		if _, err := w.Write(ev.data); err != nil {
			return err
		}
		flush()
	}
	if rp.stall {
		<-ctx.Done() // a channel wait: durably blocking inside a bubble
		return ctx.Err()
	}
	return nil
}

var chatPaths = map[string]bool{"/v1/chat/completions": true, "/chat/completions": true}

var modelPaths = map[string]bool{"/v1/models": true, "/models": true}

// modelList answers GET /models from Script.Models. Called under mu.
func (m *Mock) modelList(method string) *reply {
	m.modelLists++
	if method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, "mock provider: use GET", "invalid_request_error", "method_not_allowed")
	}
	if m.script.Models == nil {
		return apiError(http.StatusNotFound, "mock provider: the script has no models list", "invalid_request_error", "not_found")
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int    `json:"created"`
		OwnedBy string `json:"owned_by"`
		// ContextLength is OpenRouter's name for the window.
		ContextLength int `json:"context_length,omitempty"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range m.script.Models {
		list.Data = append(list.Data, model{ID: id, Object: "model", Created: Created, OwnedBy: "mock", ContextLength: m.script.ContextLengths[id]})
	}
	body, _ := json.Marshal(list)
	return &reply{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: body}
}

// credentialHeaders are never recorded or logged.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key", "Cookie"}

// receive records a request and decides the reply, consuming a step.
func (m *Mock) receive(method, path string, h http.Header, body []byte) *reply {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if modelPaths[path] {
		return m.modelList(method)
	}

	rec := Recorded{Seq: len(m.reqs) + 1, Time: now, Method: method, Path: path, Step: -1}
	rec.Header, rec.Auth = withoutCredentials(h)
	rp := m.chatReply(method, path, body, &rec, now)
	if rp.header.Get("X-Request-Id") == "" {
		rp.header.Set("X-Request-Id", "mock-req-"+strconv.Itoa(rec.Seq))
	}
	rec.Status = rp.status
	m.reqs = append(m.reqs, rec)
	if m.log != nil {
		line, _ := json.Marshal(rec)
		m.log.Write(append(line, '\n'))
	}
	return rp
}

// withoutCredentials is a copy of h without its credential headers, and
// whether it had any.
func withoutCredentials(h http.Header) (clean http.Header, auth bool) {
	clean = h.Clone()
	for _, k := range credentialHeaders {
		if clean.Get(k) != "" {
			auth = true
		}
		clean.Del(k)
	}
	return clean, auth
}

// chatReply answers a request that is not for the model list: an error for
// a wrong route, method or body (or, under strict alternation, messages),
// else the bucket's answer or the next step's. It records what the
// request asked for in rec. Called under mu.
func (m *Mock) chatReply(method, path string, body []byte, rec *Recorded, now time.Time) *reply {
	switch {
	case !chatPaths[path]:
		return apiError(http.StatusNotFound, "mock provider: no route for "+path+" (try /v1/chat/completions)", "invalid_request_error", "not_found")
	case method != http.MethodPost:
		return apiError(http.StatusMethodNotAllowed, "mock provider: use POST", "invalid_request_error", "method_not_allowed")
	}
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return apiError(http.StatusBadRequest, "mock provider: request body is not a chat completion request: "+err.Error(), "invalid_request_error", "invalid_json")
	}
	cr.recordInto(rec)
	if m.script.StrictAlternation {
		if msg := alternationProblem(rec.Messages); msg != "" {
			return apiError(http.StatusBadRequest, "mock provider (strict alternation): "+msg, "invalid_request_error", "invalid_request_error")
		}
	}
	limit, refused := m.bucket(now)
	rp := m.stepReply(&cr, rec, refused)
	for k, v := range limit {
		rp.header[k] = v
	}
	return rp
}

// stepReply is the answer to a chat request: the bucket's refusal, the next
// step, the fallback, or "script exhausted". Called under mu.
func (m *Mock) stepReply(cr *chatRequest, rec *Recorded, refused bool) *reply {
	switch {
	case refused:
		return apiError(http.StatusTooManyRequests, "mock provider: rate limit reached for requests (bucket)", "requests", "rate_limit_exceeded")
	case m.next < len(m.script.Steps):
		rec.Step = m.next
		m.next++
		return buildReply(&m.script.Steps[rec.Step], cr, *rec, rec.Seq)
	case m.script.Fallback != nil:
		rec.Fallback = true
		return buildReply(m.script.Fallback, cr, *rec, rec.Seq)
	}
	rec.Exhausted = true
	return apiError(http.StatusInternalServerError,
		fmt.Sprintf("mock provider: script exhausted: request %d, but the script has %d steps and no fallback", rec.Seq, len(m.script.Steps)),
		"server_error", "mock_script_exhausted")
}

// bucket counts a chat request against Script.Bucket: the headers to send
// and whether the request is refused. Called under mu.
func (m *Mock) bucket(now time.Time) (http.Header, bool) {
	b := m.script.Bucket
	if b == nil {
		return nil, false
	}
	window, _ := time.ParseDuration(b.Window) // validated
	if m.windowStart.IsZero() || !now.Before(m.windowStart.Add(window)) {
		m.windowStart, m.windowUsed = now, 0
	}
	reset := m.windowStart.Add(window).Sub(now)
	refused := m.windowUsed >= b.Requests
	if !refused {
		m.windowUsed++
	}
	h := http.Header{}
	h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(b.Requests))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(b.Requests-m.windowUsed))
	h.Set("X-Ratelimit-Reset-Requests", reset.String())
	if refused {
		h.Set("Retry-After", strconv.FormatInt(int64((reset+time.Second-1)/time.Second), 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(reset.Milliseconds()+1, 10))
	}
	return h, refused
}

// chatRequest is the part of a chat completion request the mock reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		ReasoningContent string          `json:"reasoning_content"`
		ToolCalls        []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
		Prefix     bool   `json:"prefix"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	ReasoningEffort     string `json:"reasoning_effort"`
	Stream              bool   `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// recordInto records what the request asks for in rec.
func (cr *chatRequest) recordInto(rec *Recorded) {
	rec.Model, rec.Stream, rec.Messages = cr.Model, cr.Stream, cr.messages()
	for _, t := range cr.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	rec.MaxTokens, rec.ReasoningEffort = cr.MaxTokens, cr.ReasoningEffort
	if rec.MaxTokens == 0 {
		rec.MaxTokens = cr.MaxCompletionTokens
	}
	rec.IncludeUsage = cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage
}

func (cr *chatRequest) messages() []Message {
	var out []Message
	for _, m := range cr.Messages {
		msg := Message{Role: m.Role, Content: contentText(m.Content), ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Images: contentImages(m.Content), Prefix: m.Prefix}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		out = append(out, msg)
	}
	return out
}

// alternationProblem says why messages would be refused by a provider that
// requires strict alternation (as DeepSeek's reasoner does): after the system
// messages, user and assistant take turns starting with user, and every
// assistant tool call is answered by a tool message before anything else.
func alternationProblem(msgs []Message) string {
	prev := "" // role of the last non-system message
	var pending []string
	for i, m := range msgs {
		if m.Role == "system" {
			if prev != "" {
				return fmt.Sprintf("messages[%d]: a system message after the conversation started", i)
			}
			continue
		}
		if len(pending) > 0 {
			if m.Role != "tool" || m.ToolCallID != pending[0] {
				return fmt.Sprintf("messages[%d]: tool call %q has no tool message answering it", i, pending[0])
			}
			pending = pending[1:]
			prev = "tool"
			continue
		}
		switch {
		case m.Role == "tool":
			return fmt.Sprintf("messages[%d]: a tool message that answers no tool call", i)
		case prev == "" && m.Role != "user":
			return fmt.Sprintf("messages[%d]: the conversation must start with a user message", i)
		case m.Role == prev:
			return fmt.Sprintf("messages[%d]: two %s messages in a row", i, m.Role)
		case prev == "tool" && m.Role == "user":
			return fmt.Sprintf("messages[%d]: a user message right after tool results; the assistant must reply first", i)
		}
		for _, tc := range m.ToolCalls {
			pending = append(pending, tc.ID)
		}
		prev = m.Role
	}
	if len(pending) > 0 {
		return fmt.Sprintf("tool call %q has no tool message answering it", pending[0])
	}
	return ""
}

// contentText reads content given as a string or as an array of parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// contentImages names the image parts of content given as an array of parts.
func contentImages(raw json.RawMessage) []string {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.Type == "image_url" {
			mediaType, _, _ := strings.Cut(strings.TrimPrefix(p.ImageURL.URL, "data:"), ";")
			out = append(out, mediaType)
		}
	}
	return out
}

// apiError is an OpenAI-style error reply.
func apiError(status int, msg, typ string, code any) *reply {
	type apiErr struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    any     `json:"code"`
	}
	body, _ := json.Marshal(struct {
		Error apiErr `json:"error"`
	}{apiErr{Message: msg, Type: typ, Code: code}})
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return &reply{status: status, header: h, body: body}
}

// defaultErrorReply is a typical provider answer for status.
func defaultErrorReply(status int) *reply {
	switch {
	case status == 401:
		return apiError(status, "Incorrect API key provided (mock provider).", "invalid_request_error", "invalid_api_key")
	case status == 403:
		return apiError(status, "mock provider: permission denied", "invalid_request_error", "permission_denied")
	case status == 404:
		return apiError(status, "mock provider: the model does not exist", "invalid_request_error", "model_not_found")
	case status == 429:
		return apiError(status, "Rate limit reached (mock provider). Please try again later.", "requests", "rate_limit_exceeded")
	case status == 529:
		// Anthropic's overloaded answer, the usual source of a 529.
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		return &reply{status: status, header: h, body: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}
	case status == 503:
		return apiError(status, "The server is overloaded or not ready yet (mock provider).", "server_error", nil)
	case status >= 500:
		return apiError(status, "The server had an error while processing your request (mock provider).", "server_error", nil)
	}
	return apiError(status, "mock provider: invalid request", "invalid_request_error", nil)
}

// buildReply turns a step into bytes for the request it answers.
func buildReply(st *Step, cr *chatRequest, rec Recorded, seq int) *reply {
	var rp *reply
	if st.isError() {
		rp = defaultErrorReply(st.Status)
		if len(st.Body) > 0 {
			var text string
			if json.Unmarshal(st.Body, &text) == nil {
				rp.body = []byte(text)
				rp.header.Set("Content-Type", "text/plain; charset=utf-8")
			} else {
				rp.body = append([]byte(nil), st.Body...)
			}
		}
	} else {
		rp = streamReply(st, cr, rec, seq)
	}
	rp.delay = duration(st.Delay)
	for k, v := range st.Headers {
		rp.header.Set(k, v)
	}
	return rp
}

// Chunk JSON, as OpenAI sends it.
type (
	chunkJSON struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []choiceJSON `json:"choices"`
		Usage   *usageJSON   `json:"usage,omitempty"`
	}
	choiceJSON struct {
		Index        int       `json:"index"`
		Delta        deltaJSON `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	}
	deltaJSON struct {
		Role             string         `json:"role,omitempty"`
		Content          string         `json:"content,omitempty"`
		ReasoningContent string         `json:"reasoning_content,omitempty"`
		ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
	}
	toolCallJSON struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	usageJSON struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
)

// streamReply is a step's answer as a chat completion stream: its reasoning,
// text and tool calls as deltas, then what ends the stream: nothing
// (drop_after), a stall (stall_after), an error event (stream_error), or
// the finish chunk, usage when asked for, and [DONE].
func streamReply(st *Step, cr *chatRequest, rec Recorded, seq int) *reply {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	rp := &reply{status: http.StatusOK, header: h, chunkDelay: duration(st.ChunkDelay)}
	s := &chunkStream{rp: rp, base: chunkJSON{ID: "chatcmpl-mock-" + strconv.Itoa(seq), Object: "chat.completion.chunk", Created: Created, Model: cr.Model}}

	text := st.Text
	if st.Echo {
		text = "You said: " + lastUser(rec.Messages)
	}
	deltas := stepDeltas(st, text)
	for _, d := range deltas[:deltasBeforeFault(st, len(deltas))] {
		s.delta(d, nil)
	}
	switch {
	case st.DropAfter != nil:
		// The body ends here: no finish chunk, no [DONE].
	case st.StallAfter != nil:
		rp.stall = true
	case len(st.StreamError) > 0:
		s.streamError(st.StreamError)
	default:
		finish := finishReason(st)
		s.delta(deltaJSON{}, &finish)
		if rec.IncludeUsage {
			s.usage(stepUsage(st, text, rec.Messages))
		}
		s.done()
	}
	if rp.events == nil {
		rp.events = []event{} // a stream that sends nothing is still a stream
	}
	return rp
}

// stepDeltas is what a step streams, n pieces each of its reasoning and
// text (n is its chunks, at least 1), then one delta per tool call.
func stepDeltas(st *Step, text string) []deltaJSON {
	n := max(st.Chunks, 1)
	var deltas []deltaJSON
	for _, r := range split(st.Reasoning, n) {
		deltas = append(deltas, deltaJSON{ReasoningContent: r})
	}
	for _, c := range split(text, n) {
		deltas = append(deltas, deltaJSON{Content: c})
	}
	for i, tc := range st.ToolCalls {
		tj := toolCallJSON{Index: i, ID: tc.ID, Type: "function"}
		tj.Function.Name, tj.Function.Arguments = tc.Name, tc.Arguments
		deltas = append(deltas, deltaJSON{ToolCalls: []toolCallJSON{tj}})
	}
	return deltas
}

// deltasBeforeFault is how many of a step's n deltas are sent before it
// drops or stalls the stream: all of them when it does neither.
func deltasBeforeFault(st *Step, n int) int {
	if st.DropAfter != nil {
		n = min(n, *st.DropAfter)
	}
	if st.StallAfter != nil {
		n = min(n, *st.StallAfter)
	}
	return n
}

// finishReason is the step's, or what a real stream would say: "tool_calls"
// after tool calls, else "stop".
func finishReason(st *Step) string {
	switch {
	case st.FinishReason != "":
		return st.FinishReason
	case len(st.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// stepUsage counts a reply's tokens as the mock's tokenizer would: the
// prompt is every message's content, the completion its text, reasoning
// and tool calls.
func stepUsage(st *Step, text string, msgs []Message) usageJSON {
	completion := text + st.Reasoning
	for _, tc := range st.ToolCalls {
		completion += tc.Name + tc.Arguments
	}
	prompt := ""
	for _, m := range msgs {
		prompt += m.Content
	}
	u := usageJSON{PromptTokens: tokens(prompt), CompletionTokens: tokens(completion)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// chunkStream writes a stream's events into rp, each chunk a copy of base.
type chunkStream struct {
	rp   *reply
	base chunkJSON
}

// add appends one event; every one but the first waits the chunk delay.
func (s *chunkStream) add(data []byte, delayed bool) {
	s.rp.events = append(s.rp.events, event{data: data, delayed: delayed && len(s.rp.events) > 0})
}

// delta sends a chunk of one choice; finish, when set, ends the choice.
func (s *chunkStream) delta(d deltaJSON, finish *string) {
	c := s.base
	if len(s.rp.events) == 0 {
		d.Role = "assistant" // OpenAI names the role in the first chunk
	}
	c.Choices = []choiceJSON{{Delta: d, FinishReason: finish}}
	s.add(sse(c), true)
}

// usage sends the usage chunk: no choices. It follows the finish chunk at
// once, as in real streams.
func (s *chunkStream) usage(u usageJSON) {
	c := s.base
	c.Choices, c.Usage = []choiceJSON{}, &u
	s.add(sse(c), false)
}

// streamError sends an error event, the raw JSON compacted.
func (s *chunkStream) streamError(raw json.RawMessage) {
	var b bytes.Buffer
	b.WriteString(`data: {"error":`)
	json.Compact(&b, raw)
	b.WriteString("}\n\n")
	s.add(b.Bytes(), true)
}

// done ends the stream with [DONE], at once.
func (s *chunkStream) done() { s.add([]byte("data: [DONE]\n\n"), false) }

// sse frames one chunk. HTML escaping is off: the text reads as it was
// written in transcripts and demos.
func sse(v any) []byte {
	var b bytes.Buffer
	b.WriteString("data: ")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // cannot fail: plain structs
	b.Truncate(b.Len() - 1)
	b.WriteString("\n\n")
	return b.Bytes()
}

// split cuts s into at most n pieces of nearly equal rune counts.
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	n = min(n, len(r))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

// tokens is a stable stand-in for a tokenizer: about four runes a token.
func tokens(s string) int { return (len([]rune(s)) + 3) / 4 }

func lastUser(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

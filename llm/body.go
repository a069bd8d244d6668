package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"unsafe"

	openai "github.com/sashabaranov/go-openai"
)

// The request body, a message at a time. go-openai marshals the whole
// ChatCompletionRequest for every request, so a session's history was
// encoded again before every step: O(history) per request (9 ms at 1000
// turns, BENCHMARKS.md). A history is append-only between compactions, so
// the adapter hands go-openai the request with an empty message list, which
// go-openai encodes as it always does (model, limits, tools, options), and
// the transport splices into that list each message's encoding, made by
// go-openai's own MarshalJSON and kept from the request that first sent the
// message. The bytes are go-openai's: TestOpenAI_BodyIsGoOpenAIs and
// FuzzRequestBody compare them with what go-openai sends for the whole
// request.
//
// What it takes from go-openai: ChatCompletionMessage's encoding, and the
// shape of a request body, `{"model":…,"messages":[],…}` (spliceBody
// checks it and fails the attempt if an upgrade changes it).

// wireMessage maps a Message to go-openai's. Reasoning is not sent back:
// DeepSeek rejects reasoning_content in requests and others ignore it. Prefix
// is not a go-openai field; encodeMessages adds it.
func wireMessage(m Message) openai.ChatCompletionMessage {
	cm := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
	if len(m.Images) > 0 {
		// Content and MultiContent are exclusive in go-openai.
		cm.Content = ""
		cm.MultiContent = []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: m.Content}}
		for _, img := range m.Images {
			cm.MultiContent = append(cm.MultiContent, openai.ChatMessagePart{
				Type:     openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: "data:" + img.MimeType + ";base64," + img.Data},
			})
		}
	}
	for _, tc := range m.ToolCalls {
		cm.ToolCalls = append(cm.ToolCalls, openai.ToolCall{
			ID:       tc.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return cm
}

// encodeMessage is m as go-openai writes it inside a request body,
// followed by the comma that separates it from the next. There
// encoding/json takes the message's MarshalJSON output and compacts it,
// escaping HTML; that output is json.Marshal's already (compact,
// escaped), so the pass would change nothing and is left out.
func encodeMessage(m Message) ([]byte, error) {
	b, err := wireMessage(m).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode a %s message: %w", m.Role, err)
	}
	// Exactly as long: append would leave up to half as much again unused,
	// for as long as the cache keeps it.
	enc := make([]byte, len(b)+1)
	enc[copy(enc, b)] = ','
	return enc, nil
}

// errPrefixRole: a continued message must be the assistant's.
var errPrefixRole = errors.New("mark the continued message: the last message is not the assistant's")

// wireMessages is a request's message list, encoded: one part a message,
// for the transport to splice into go-openai's body (spliceBody).
type wireMessages struct {
	model string
	// parts holds an empty first and last slot for the body's head and
	// tail, and between them each message's encoding, every one but the
	// last followed by a comma. The encodings are shared with the cache and
	// never written to.
	parts [][]byte
}

// encodeMessages encodes req's messages, taking each one's encoding from
// the cache when it was sent before. A last message with Prefix set is
// marked "prefix": true, the form DeepSeek and Mistral document; it is a
// partial reply that changes with every continuation, so it is not kept.
func (c *bodyCache) encodeMessages(req Request) (*wireMessages, error) {
	msgs := req.Messages
	var prefixed *Message
	if n := len(msgs); n > 0 && msgs[n-1].Prefix {
		if msgs[n-1].Role != RoleAssistant {
			return nil, errPrefixRole
		}
		prefixed, msgs = &msgs[n-1], msgs[:n-1]
	}
	parts := make([][]byte, len(req.Messages)+2)
	if err := c.encode(msgs, parts[1:]); err != nil {
		return nil, err
	}
	if prefixed != nil {
		b, err := encodeMessage(*prefixed)
		if err != nil {
			return nil, err
		}
		// b ends with "},": the mark goes in before the brace.
		parts[len(parts)-2] = append(b[:len(b)-2:len(b)-2], `,"prefix":true},`...)
	}
	if n := len(parts) - 2; n > 0 {
		last := parts[n]
		parts[n] = last[:len(last)-1] // no comma after the last
	}
	return &wireMessages{model: req.Model, parts: parts}, nil
}

// spliceBody returns go-openai's request body, written with no messages,
// with w's in their place, and its length.
func (w *wireMessages) spliceBody(body []byte) ([][]byte, int64, error) {
	model, err := json.Marshal(w.model)
	if err != nil {
		return nil, 0, fmt.Errorf("splice the messages into the request: %w", err)
	}
	head := slices.Concat([]byte(`{"model":`), model, []byte(`,"messages":[`))
	if !bytes.HasPrefix(body, head) || len(body) == len(head) || body[len(head)] != ']' {
		// go-openai's ChatCompletionRequest starts with these two fields;
		// an upgrade that changes that must be looked at, not guessed at.
		return nil, 0, errors.New("splice the messages into the request: go-openai's body does not start with the model and an empty message list")
	}
	parts := w.parts
	parts[0], parts[len(parts)-1] = body[:len(head)], body[len(head):]
	var n int64
	for _, p := range parts {
		n += int64(len(p))
	}
	return parts, n, nil
}

// withMessages returns req, go-openai's request written with no messages,
// with w's spliced in. The parts are read in place, never copied into one
// buffer: at a thousand turns that is a megabyte per request.
func withMessages(req *http.Request, w *wireMessages) (*http.Request, error) {
	if req.Body == nil {
		return nil, errors.New("splice the messages into the request: it has no body")
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("splice the messages into the request: %w", err)
	}
	parts, n, err := w.spliceBody(body)
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = &partsReader{parts: parts}
	r.ContentLength = n
	r.GetBody = func() (io.ReadCloser, error) { return &partsReader{parts: parts}, nil }
	return r, nil
}

// partsReader reads a body kept in parts, without writing to them (unlike
// net.Buffers, which clears what it consumed), so GetBody can read them
// again.
type partsReader struct {
	parts [][]byte
	i     int // the part being read
	off   int // in it
}

func (r *partsReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.parts) {
		c := copy(p[n:], r.parts[r.i][r.off:])
		n, r.off = n+c, r.off+c
		if r.off == len(r.parts[r.i]) {
			r.i, r.off = r.i+1, 0
		}
	}
	if n == 0 && r.i == len(r.parts) {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes the parts as they are: the HTTP client copies a body with
// io.Copy, which then needs no buffer of its own.
func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for r.i < len(r.parts) {
		c, err := w.Write(r.parts[r.i][r.off:])
		n += int64(c)
		if err != nil {
			r.off += c
			return n, err
		}
		r.i, r.off = r.i+1, 0
	}
	return n, nil
}

func (r *partsReader) Close() error { return nil }

// Limits of the encoded-message cache: a generation ends after this many
// requests, or at the first request once the cache holds this many bytes,
// and then whatever no request of it or of the generation before used is
// dropped. So an encoding no request uses lives two generations at most: a
// message a compaction dropped, a session no longer prompted, a merged
// message that is made anew for each request (agent's alternate).
const (
	bodyGenRequests = 16
	bodyGenBytes    = 64 << 20
)

// bodyCache keeps the encoding of the messages recent requests sent, for
// the next requests that send them again: a history sends every message
// again at every step. It serves every session of the adapter.
//
// A message is found by the identity of its strings (msgKey) and taken
// only when it still equals the one encoded: the entry keeps its own copy
// of the message's fields (the strings themselves are shared: Go strings
// are never written to), and a string compare of two strings at the same
// address is a pointer compare. So a message changed after it was encoded
// (a system prompt replaced in place, a tool call rewritten in its slice)
// is encoded again, never sent stale; one equal to an encoded one but
// built anew (a session loaded again) is encoded once more.
type bodyCache struct {
	mu       sync.Mutex
	entries  map[msgKey]*encodedMessage
	bytes    int // encoded bytes in entries
	gen      int // the generation's number
	requests int // in this generation
	// last is the entries of the last request, by position: the next
	// request of the same session finds its history there, message i at
	// i, for a compare and no lookup. A request takes it while it works
	// (nil meanwhile: another session's request looks its messages up).
	last []*encodedMessage
}

type encodedMessage struct {
	msg  Message // what b encodes; Reasoning and Prefix are not encoded and not kept
	b    []byte
	used int // the last generation a request used it in
}

// msgKey is the addresses of a message's role, content and first other
// string (the tool call id it answers, its first tool call's id or
// arguments, its first image), and the content's length: a cheap key that
// two live messages share only when they share those strings. Two such
// messages that differ (one content shared by calls with the same id)
// replace each other's entry: correct, only slower.
type msgKey struct {
	role, content, other uintptr
	n                    int
}

func keyOf(m *Message) msgKey {
	other := m.ToolCallID
	switch {
	case other != "":
	case len(m.ToolCalls) > 0:
		other = cmp.Or(m.ToolCalls[0].ID, m.ToolCalls[0].Arguments)
	case len(m.Images) > 0:
		other = m.Images[0].Data
	}
	return msgKey{role: addr(string(m.Role)), content: addr(m.Content), other: addr(other), n: len(m.Content)}
}

// addr is where s's bytes are. Strings are never written to, so while an
// entry keeps its strings their addresses are not reused.
func addr(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }

// sameMessage reports whether a and b encode the same (Reasoning and
// Prefix are not encoded).
func sameMessage(a, b *Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID &&
		slices.Equal(a.ToolCalls, b.ToolCalls) && slices.Equal(a.Images, b.Images)
}

// encode fills out[i] with the encoding of msgs[i], followed by a comma.
// Encoding happens outside the lock: a long message does not hold up
// another session's request.
func (c *bodyCache) encode(msgs []Message, out [][]byte) error {
	c.mu.Lock()
	last, miss := c.lookUp(msgs, out)
	c.mu.Unlock()
	made, err := encodeMissing(msgs, miss, out, last)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range made {
		c.put(e)
	}
	if err == nil {
		c.last = last
	}
	return err
}

// lookUp starts a request and fills out[i] with the encoding of msgs[i]
// where the cache has it; miss is the indexes of the others. last is the
// request's entries by position (nil for a miss), the request's own until
// it gives them back as c.last.
func (c *bodyCache) lookUp(msgs []Message, out [][]byte) (last []*encodedMessage, miss []int) {
	c.startRequest()
	last = c.last // updated in place: entry i of this request replaces entry i of the last
	c.last = nil
	for i := range msgs {
		e := c.find(last, i, &msgs[i])
		if i < len(last) {
			if last[i] != e { // most are the same: no write, no write barrier
				last[i] = e
			}
		} else {
			last = append(last, e)
		}
		if e != nil {
			out[i] = e.b
		} else {
			miss = append(miss, i)
		}
	}
	clear(last[len(msgs):])
	return last[:len(msgs)], miss
}

// find is the entry of m, the request's message i: the last request's
// entry i when it encodes the same, else the one looked up, or nil.
func (c *bodyCache) find(last []*encodedMessage, i int, m *Message) *encodedMessage {
	if i < len(last) && last[i] != nil && sameMessage(&last[i].msg, m) {
		e := last[i]
		if e.used != c.gen {
			e.used = c.gen
		}
		return e
	}
	return c.get(m)
}

// encodeMissing encodes msgs[i] for each i of miss into out[i], and into a
// new entry at last[i]; made is the new entries, for the cache. It stops
// at the first error.
func encodeMissing(msgs []Message, miss []int, out [][]byte, last []*encodedMessage) ([]*encodedMessage, error) {
	made := make([]*encodedMessage, 0, len(miss))
	for _, i := range miss {
		b, err := encodeMessage(msgs[i])
		if err != nil {
			return made, err
		}
		m := msgs[i]
		m.Reasoning, m.Prefix = "", false
		m.ToolCalls, m.Images = slices.Clone(m.ToolCalls), slices.Clone(m.Images)
		e := &encodedMessage{msg: m, b: b}
		made = append(made, e)
		out[i], last[i] = b, e
	}
	return made, nil
}

// startRequest starts a generation when this one is over, and drops what
// neither used.
func (c *bodyCache) startRequest() {
	if c.entries == nil {
		c.entries = map[msgKey]*encodedMessage{}
	}
	c.requests++
	if c.requests <= bodyGenRequests && c.bytes < bodyGenBytes {
		return
	}
	c.gen++
	c.requests = 1
	for k, e := range c.entries {
		if e.used < c.gen-1 {
			delete(c.entries, k)
			c.bytes -= len(e.b)
		}
	}
}

func (c *bodyCache) get(m *Message) *encodedMessage {
	e := c.entries[keyOf(m)]
	if e == nil || !sameMessage(&e.msg, m) {
		return nil
	}
	e.used = c.gen
	return e
}

func (c *bodyCache) put(e *encodedMessage) {
	k := keyOf(&e.msg)
	if old := c.entries[k]; old != nil {
		c.bytes -= len(old.b)
	}
	c.entries[k] = e
	c.bytes += len(e.b)
	e.used = c.gen
}

// size is what the cache holds: entries and encoded bytes.
func (c *bodyCache) size() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}

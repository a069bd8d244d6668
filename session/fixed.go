package session

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Reading an event's data in the one form the log writes it, without
// reflection: json.Marshal's output for the type (compact, keys in field
// order, omitempty keys left out). A load decodes every event's data once,
// and with encoding/json that decode was most of a load's time: for a long
// reply, a scanner state change per byte of its text, twice. readFixed
// takes only that form, and only values encoding/json reads to exactly the
// same result; on anything else it says no and the caller decodes with
// encoding/json, which also says why bad data is bad. FuzzReadFixed holds
// the two to the same value on every input readFixed takes.

// Unmarshal is json.Unmarshal(data, v) for an event's data, without
// reflection when data is in the form the log writes (see readFixed).
func Unmarshal[T any](data []byte, v *T) error {
	if readFixed(v, data) {
		return nil
	}
	*v = *new(T)
	return json.Unmarshal(data, v)
}

// readFixed decodes b into p, a pointer to an event's data struct, if b is
// in the form the log writes; false (p then holds garbage) otherwise or for
// a type it does not read.
func readFixed(p any, b []byte) bool {
	r := fixedReader{b: b, ok: true}
	if !r.open() {
		return false
	}
	switch v := p.(type) {
	case *AssistantMessage:
		r.int("turn", &v.Turn)
		r.int("step", &v.Step)
		r.str("messageId", &v.MessageID)
		r.str("text", &v.Text)
		r.optStr("reasoning", &v.Reasoning)
		r.optStr("finishReason", &v.FinishReason)
		if r.optKey("toolCalls") {
			r.array(func() {
				var c MessageToolCall
				if r.open() {
					r.str("id", &c.ID)
					r.str("name", &c.Name)
					r.str("arguments", &c.Arguments)
					r.optStr("providerId", &c.ProviderID)
					r.close()
				}
				v.ToolCalls = append(v.ToolCalls, c)
			})
		}
		r.optBool("incomplete", &v.Incomplete)
	case *AssistantChunk:
		r.int("turn", &v.Turn)
		r.int("step", &v.Step)
		r.optStr("text", &v.Text)
		r.optStr("reasoning", &v.Reasoning)
		r.optBool("shown", &v.Shown)
		r.optStr("messageId", &v.MessageID)
	case *TurnStart:
		r.int("turn", &v.Turn)
		r.raw("prompt", &v.Prompt)
		r.str("text", &v.Text)
		if r.optKey("local") {
			v.Local = new(bool)
			r.boolean(v.Local)
		}
	case *StepStart:
		r.int("turn", &v.Turn)
		r.int("step", &v.Step)
		r.optStr("model", &v.Model)
		r.optStr("reasoningEffort", &v.ReasoningEffort)
		r.optStr("messageId", &v.MessageID)
	case *StepEnd:
		r.int("turn", &v.Turn)
		r.int("step", &v.Step)
		r.str("outcome", &v.Outcome)
		r.optRaw("failure", &v.Failure)
		if r.optKey("usage") && r.open() {
			u := new(StepUsage)
			r.uint("used", &u.Used)
			r.optUint("size", &u.Size)
			r.optBool("estimated", &u.Estimated)
			r.optInt("promptTokens", &u.PromptTokens)
			r.optInt("completionTokens", &u.CompletionTokens)
			r.optInt("cachedTokens", &u.CachedTokens)
			if r.optKey("cost") {
				u.Cost = new(float64)
				r.float(u.Cost)
			}
			r.optStr("currency", &u.Currency)
			r.close()
			v.Usage = u
		}
		r.optInt("streamedChars", &v.StreamedChars)
		r.optInt("shownChars", &v.ShownChars)
	case *ToolCall:
		r.int("turn", &v.Turn)
		r.int("step", &v.Step)
		r.str("toolCallId", &v.ToolCallID)
		r.str("name", &v.Name)
		r.str("arguments", &v.Arguments)
		r.optStr("title", &v.Title)
		r.optStr("kind", &v.Kind)
		if r.optKey("locations") {
			r.array(func() {
				var s string
				r.string(&s)
				v.Locations = append(v.Locations, s)
			})
		}
	case *ToolResult:
		r.int("turn", &v.Turn)
		r.str("toolCallId", &v.ToolCallID)
		r.str("status", &v.Status)
		r.str("output", &v.Output)
		r.optRaw("content", &v.Content)
	case *TurnEnd:
		r.int("turn", &v.Turn)
		r.optStr("stopReason", &v.StopReason)
		r.optRaw("error", &v.Error)
		r.optBool("interrupted", &v.Interrupted)
		r.optStr("title", &v.Title)
	case *Compaction:
		r.int("turn", &v.Turn)
		r.optInt("step", &v.Step)
		r.optStr("compactionId", &v.CompactionID)
		r.str("summary", &v.Summary)
		r.int("replaced", &v.Replaced)
		r.optInt("beforeChars", &v.BeforeChars)
		r.optInt("afterChars", &v.AfterChars)
		r.optStr("failed", &v.Failed)
	default:
		return false
	}
	r.close()
	return r.ok && len(r.b) == 0
}

// fixedReader reads one object's keys in a fixed order. Every method is a
// no-op once ok is false, so a decoder is a straight list of fields.
type fixedReader struct {
	b     []byte // what is left to read
	ok    bool
	first bool // no key read yet in the innermost open object or array
}

// open reads '{'.
func (r *fixedReader) open() bool {
	if !r.ok || len(r.b) == 0 || r.b[0] != '{' {
		r.ok = false
		return false
	}
	r.b, r.first = r.b[1:], true
	return true
}

// close reads '}'.
func (r *fixedReader) close() {
	if !r.ok || len(r.b) == 0 || r.b[0] != '}' {
		r.ok = false
		return
	}
	r.b, r.first = r.b[1:], false
}

// optKey reads `"name":`, after a comma unless it is the object's first
// key, if it comes next.
func (r *fixedReader) optKey(name string) bool {
	if !r.ok {
		return false
	}
	b := r.b
	if !r.first {
		if len(b) == 0 || b[0] != ',' {
			return false
		}
		b = b[1:]
	}
	// Keys are field names: plain ASCII, written as they are.
	if len(b) < len(name)+3 || b[0] != '"' || string(b[1:1+len(name)]) != name || b[1+len(name)] != '"' || b[2+len(name)] != ':' {
		return false
	}
	r.b, r.first = b[len(name)+3:], false
	return true
}

// key reads `"name":`, which must come next.
func (r *fixedReader) key(name string) bool {
	if !r.optKey(name) {
		r.ok = false
	}
	return r.ok
}

func (r *fixedReader) str(name string, p *string) {
	if r.key(name) {
		r.string(p)
	}
}

func (r *fixedReader) optStr(name string, p *string) {
	if r.optKey(name) {
		r.string(p)
	}
}

func (r *fixedReader) int(name string, p *int) {
	if r.key(name) {
		r.integer(p)
	}
}

func (r *fixedReader) optInt(name string, p *int) {
	if r.optKey(name) {
		r.integer(p)
	}
}

func (r *fixedReader) uint(name string, p *uint64) {
	if r.key(name) {
		r.unsigned(p)
	}
}

func (r *fixedReader) optUint(name string, p *uint64) {
	if r.optKey(name) {
		r.unsigned(p)
	}
}

func (r *fixedReader) optBool(name string, p *bool) {
	if r.optKey(name) {
		r.boolean(p)
	}
}

func (r *fixedReader) boolean(p *bool) {
	switch {
	case bytes.HasPrefix(r.b, []byte("true")):
		*p, r.b = true, r.b[4:]
	case bytes.HasPrefix(r.b, []byte("false")):
		*p, r.b = false, r.b[5:]
	default:
		r.ok = false
	}
}

func (r *fixedReader) raw(name string, p *json.RawMessage) {
	if r.key(name) {
		r.rawValue(p)
	}
}

func (r *fixedReader) optRaw(name string, p *json.RawMessage) {
	if r.optKey(name) {
		r.rawValue(p)
	}
}

// array reads '[', elements each read by elem, and ']'. An empty array is
// not the form the writer uses (omitempty leaves it out), so it is refused
// too: encoding/json would give an empty, not a nil, slice.
func (r *fixedReader) array(elem func()) {
	if !r.ok || len(r.b) == 0 || r.b[0] != '[' {
		r.ok = false
		return
	}
	r.b = r.b[1:]
	for r.ok {
		elem()
		if !r.ok || len(r.b) == 0 {
			r.ok = false
			return
		}
		c := r.b[0]
		r.b = r.b[1:]
		if c == ']' {
			r.first = false
			return
		}
		if c != ',' {
			r.ok = false
		}
	}
}

// number cuts the JSON number that comes next: -?(0|[1-9][0-9]*), then a
// fraction and an exponent when frac.
func (r *fixedReader) number(frac bool) []byte {
	b := r.b
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	n := digitRun(b[i:])
	if n == 0 || n > 1 && b[i] == '0' {
		r.ok = false
		return nil
	}
	i += n
	if frac {
		f, ok := fractionExponent(b[i:])
		if !ok {
			r.ok = false
			return nil
		}
		i += f
	}
	r.b = b[i:]
	return b[:i]
}

// fractionExponent is the length of the fraction and exponent b starts
// with, each optional; ok is false for a '.' or an 'e' with no digits.
func fractionExponent(b []byte) (n int, ok bool) {
	i := 0
	if i < len(b) && b[i] == '.' {
		d := digitRun(b[i+1:])
		if d == 0 {
			return 0, false
		}
		i += 1 + d
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := digitRun(b[i:])
		if d == 0 {
			return 0, false
		}
		i += d
	}
	return i, true
}

// digitRun is the length of b's prefix of ASCII digits.
func digitRun(b []byte) int {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return n
}

func (r *fixedReader) integer(p *int) {
	if !r.ok {
		return
	}
	num := r.number(false)
	n, err := strconv.ParseInt(string(num), 10, strconv.IntSize)
	if !r.ok || err != nil {
		r.ok = false
		return
	}
	*p = int(n)
}

func (r *fixedReader) unsigned(p *uint64) {
	if !r.ok {
		return
	}
	num := r.number(false)
	n, err := strconv.ParseUint(string(num), 10, 64)
	if !r.ok || err != nil {
		r.ok = false
		return
	}
	*p = n
}

func (r *fixedReader) float(p *float64) {
	if !r.ok {
		return
	}
	num := r.number(true)
	f, err := strconv.ParseFloat(string(num), 64)
	if !r.ok || err != nil {
		r.ok = false
		return
	}
	*p = f
}

// rawValue copies the object or array that comes next, as encoding/json
// copies a json.RawMessage, once json.Valid agrees it is one.
func (r *fixedReader) rawValue(p *json.RawMessage) {
	if !r.ok {
		return
	}
	n := valueEnd(r.b)
	if n < 0 || !json.Valid(r.b[:n]) {
		r.ok = false
		return
	}
	*p, r.b = bytes.Clone(r.b[:n]), r.b[n:]
}

// valueEnd is the length of the object or array b starts with, found by
// counting brackets outside strings; -1 if it does not end or b starts
// with anything else. The caller checks it is valid.
func valueEnd(b []byte) int {
	if len(b) == 0 || b[0] != '{' && b[0] != '[' {
		return -1
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			n := stringEnd(b[i+1:])
			if n < 0 {
				return -1
			}
			i += n + 1
		}
	}
	return -1
}

// stringEnd is the index in b, a string's bytes after its opening quote,
// of the closing quote; -1 if there is none.
func stringEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		backslashes := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
		i++
	}
}

// string decodes the JSON string that comes next. It takes only strings
// encoding/json decodes to the same bytes without replacing any: valid
// UTF-8, no control characters, the standard escapes and \u escapes that
// are not lone surrogates.
func (r *fixedReader) string(p *string) {
	if !r.ok {
		return
	}
	b := r.b
	if len(b) == 0 || b[0] != '"' {
		r.ok = false
		return
	}
	b = b[1:]
	// Most strings have no escape: they are their bytes.
	if i := plainRun(b); i < len(b) && b[i] == '"' {
		if !utf8.Valid(b[:i]) {
			r.ok = false
			return
		}
		*p, r.b = string(b[:i]), b[i+1:]
		return
	}
	end := stringEnd(b)
	if end < 0 {
		r.ok = false
		return
	}
	s, ok := unescape(b[:end])
	if !ok {
		r.ok = false
		return
	}
	*p, r.b = s, b[end+1:]
}

// unescape decodes in, a JSON string's bytes between its quotes; ok is
// false where string refuses it.
func unescape(in []byte) (s string, ok bool) {
	// Escapes are ASCII, so the encoding is valid UTF-8 just when the text
	// between them is.
	if !utf8.Valid(in) {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(in)) // the decoded string is never longer than its encoding
	for {
		i := plainRun(in)
		b.Write(in[:i])
		in = in[i:]
		if len(in) == 0 {
			return b.String(), true
		}
		c, n := escape(in)
		if n == 0 {
			return "", false
		}
		b.WriteRune(c)
		in = in[n:]
	}
}

// simpleEscapes maps the byte after a backslash to what it stands for,
// for every escape but \u.
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes the escape in starts with: the rune and how many bytes it
// takes, n 0 for a control character or an escape JSON does not have.
func escape(in []byte) (c rune, n int) {
	if in[0] != '\\' || len(in) < 2 {
		return 0, 0
	}
	if e := simpleEscapes[in[1]]; e != 0 {
		return rune(e), 2
	}
	if in[1] == 'u' {
		return unicodeEscape(in)
	}
	return 0, 0
}

// unicodeEscape decodes the \u escape in starts with, n 0 for a lone
// surrogate: only a high surrogate followed by a low one is a rune.
func unicodeEscape(in []byte) (c rune, n int) {
	c, ok := hex4(in[2:])
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(c) {
		return c, 6
	}
	if len(in) < 12 || in[6] != '\\' || in[7] != 'u' {
		return 0, 0
	}
	lo, ok := hex4(in[8:])
	if !ok {
		return 0, 0
	}
	if c = utf16.DecodeRune(c, lo); c == utf8.RuneError {
		return 0, 0
	}
	return c, 12
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var c rune
	for _, h := range b[:4] {
		switch {
		case '0' <= h && h <= '9':
			h -= '0'
		case 'a' <= h && h <= 'f':
			h -= 'a' - 10
		case 'A' <= h && h <= 'F':
			h -= 'A' - 10
		default:
			return 0, false
		}
		c = c<<4 | rune(h)
	}
	return c, true
}

// plainRun is the length of b's prefix with no '"', '\\' or control
// character, eight bytes at a time: a reply's text is most of a log.
func plainRun(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, s := x^(ones*'"'), x^(ones*'\\')
		// A byte of (v - ones) & ^v & highs is set where v's byte is zero
		// (the test is exact for "any byte"): here, below 0x20, a quote
		// or a backslash.
		if ((x-ones*0x20)&^x|(q-ones)&^q|(s-ones)&^s)&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

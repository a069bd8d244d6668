package llm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/llm"
)

// Property tests of the stream's dialects: framings, code forms, splits and
// argument forms the corpus (testdata/providers) does not have, generated.

// propSeed is a fixed seed per test, so a failure is reproduced by running
// the test again; the iteration that failed is named in the message.
func propRand(t *testing.T) *rand.Rand {
	t.Helper()
	return rand.New(rand.NewPCG(uint64(len(t.Name())), 31))
}

// errorFrame is one generated in-stream error and what must come of it.
type errorFrame struct {
	body       string // the whole 200 body
	before     string // the content sent before the error
	message    string // the provider's words, which the error must keep
	wantStatus int    // the status of the *llm.Error: the frame's, a comment's, or 200
}

var propStatuses = []int{400, 401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504, 529}

// genErrorFrame builds an error frame: a framing (a data line with or
// without a space, under "event: error", after a gateway's status comment)
// × a code form (numeric, a string of digits, a status member of another
// name, a word, a provider's own number, none) × a nesting (flat, nested,
// Anthropic's envelope, vLLM's object, a bare string) × where in the stream
// (first, after content, after reasoning, among keep-alives; [DONE] after
// it or not).
func genErrorFrame(r *rand.Rand) errorFrame {
	words := []string{"upstream", "Rate", "limit", "exceeded,", "quota", "überlastet", "请稍后重试", "try", "again", "in", "2s.", "\"quoted\"", "a\\b"}
	n := 1 + r.IntN(6)
	msgWords := make([]string, n)
	for i := range msgWords {
		msgWords[i] = words[r.IntN(len(words))]
	}
	f := errorFrame{message: strings.Join(msgWords, " "), wantStatus: 200}
	status := propStatuses[r.IntN(len(propStatuses))]

	// The members that carry the code, by form.
	var code string
	switch r.IntN(8) {
	case 0:
		code, f.wantStatus = fmt.Sprintf(`"code":%d`, status), status
	case 1:
		code, f.wantStatus = fmt.Sprintf(`"code":"%d"`, status), status
	case 2:
		code, f.wantStatus = fmt.Sprintf(`"status":%d`, status), status
	case 3:
		code, f.wantStatus = fmt.Sprintf(`"status_code":%d,"code":"upstream_error"`, status), status
	case 4:
		code, f.wantStatus = fmt.Sprintf(`"http_status":"%d"`, status), status
		if r.IntN(2) == 0 {
			code = fmt.Sprintf(`"code":"%d %s"`, status, http.StatusText(status))
		}
	case 5:
		code = `"code":"rate_limit_exceeded"`
	case 6:
		code = fmt.Sprintf(`"code":%d`, 1000+r.IntN(400)) // a provider's own number, no HTTP status
	case 7:
		code = `"code":null`
	}
	msg := `"message":` + jsonString(f.message)
	var payload string
	switch r.IntN(7) {
	case 6: // Google's array of one
		payload = `[{"error":{` + code + "," + msg + `}}]`
	case 0: // flat
		payload = "{" + code + "," + msg + "}"
	case 1: // nested
		payload = `{"error":{` + msg + "," + code + `,"type":"server_error"}}`
	case 2: // nested in a chunk that also has choices (OpenRouter)
		payload = `{"id":"gen-1","object":"chat.completion.chunk","error":{` + code + "," + msg + `},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`
	case 3: // Anthropic's envelope, through a gateway
		payload = `{"type":"error","error":{"type":"api_error",` + msg + "," + code + "}}"
	case 4: // vLLM's object, flat or nested
		obj := `{"object":"error",` + msg + `,"type":"BadRequestError","param":null,` + code + "}"
		if r.IntN(2) == 0 {
			obj = `{"error":` + obj + "}"
		}
		payload = obj
	case 5: // a bare string: no code at all
		payload = `{"error":` + jsonString(f.message) + "}"
		f.wantStatus = 200
	}

	var b strings.Builder
	keepAlive := func() {
		if r.IntN(3) == 0 {
			b.WriteString(": ping\n\n")
		}
	}
	keepAlive()
	if r.IntN(3) == 0 {
		b.WriteString(sseEvents(reasoningDelta("hmm")))
	}
	for i, k := 0, r.IntN(4); i < k; i++ {
		piece := words[r.IntN(len(words))] + " "
		f.before += piece
		b.WriteString(sseEvents(contentDelta(piece)))
		keepAlive()
	}
	if f.wantStatus == 200 && r.IntN(2) == 0 {
		// A gateway's comment gives the status the frame does not.
		f.wantStatus = propStatuses[r.IntN(len(propStatuses))]
		fmt.Fprintf(&b, ": HTTP_STATUS/%d\n\n", f.wantStatus)
	}
	if r.IntN(2) == 0 {
		b.WriteString("event: error\n")
	}
	if r.IntN(2) == 0 {
		b.WriteString("data:" + payload + "\n\n")
	} else {
		b.WriteString("data: " + payload + "\n\n")
	}
	if r.IntN(2) == 0 {
		b.WriteString("data: [DONE]\n\n")
	}
	f.body = b.String()
	return f
}

// Every generated error frame ends the stream with the provider's error
// (never io.EOF, never a broken connection or a malformed stream), with its
// words and the HTTP status it carries, after the content sent before it.
func TestStream_ErrorFramesProperty(t *testing.T) {
	r := propRand(t)
	for i := range 600 {
		f := genErrorFrame(r)
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: rawDoer{200, f.body}})
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		_, reply, err := drain(t, s)
		s.Close()
		pe, ok := errors.AsType[*llm.Error](err)
		if !ok || !pe.InStream {
			t.Fatalf("#%d: Recv() = %v, want an in-stream *llm.Error\nbody:\n%s", i, err, f.body)
		}
		if pe.Status != f.wantStatus {
			t.Errorf("#%d: status %d, want %d\nbody:\n%s", i, pe.Status, f.wantStatus, f.body)
		}
		if !strings.Contains(pe.Message, f.message) {
			t.Errorf("#%d: message %q does not keep the provider's %q\nbody:\n%s", i, pe.Message, f.message, f.body)
		}
		if reply.Content != f.before {
			t.Errorf("#%d: content before the error %q, want %q\nbody:\n%s", i, reply.Content, f.before, f.body)
		}
	}
}

// An event named "error" whose data is plain text is the provider's error,
// its text the message; with only a status comment and then the end of the
// body, the status is the failure.
func TestStream_ErrorEventPlainTextAndStatusComment(t *testing.T) {
	tests := []struct {
		name, body, msg string
		status          int
	}{
		{"text under event: error", sseEvents(contentDelta("a")) + "event: error\ndata: upstream connect timeout\n\n", "upstream connect timeout", 200},
		{"text after a status comment", ": HTTP_STATUS/503\n\nevent: error\ndata: no healthy upstream\n\n", "no healthy upstream", 503},
		{"a status comment, then the end", sseEvents(contentDelta("a")) + ":HTTP_STATUS/429\n\n", "HTTP 429", 429},
		{"an event name in capitals", "event: ERROR\ndata: {\"msg\":\"x\",\"code\":\"E1\"}\n\n", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := streamOf(t, tt.body)
			_, _, err := drain(t, s)
			pe, ok := errors.AsType[*llm.Error](err)
			if !ok || !pe.InStream || pe.Status != tt.status || !strings.Contains(pe.Message, tt.msg) {
				t.Fatalf("Recv() = %#v, want an in-stream error with status %d saying %q", err, tt.status, tt.msg)
			}
		})
	}
	// A comment that names no error status, and ordinary comments, change
	// nothing.
	s := streamOf(t, ": HTTP_STATUS/200\n\n: keep-alive 429\n\n"+sseBody("stop", contentDelta("ok")))
	if _, r, err := drain(t, s); err != io.EOF || r.Content != "ok" {
		t.Fatalf("Recv() = %v with %q, want the reply", err, r.Content)
	}
}

// contentStream is a 200 body whose content is sent in the given pieces,
// then a finish.
func contentStream(pieces []string) string {
	deltas := make([]string, len(pieces))
	for i, p := range pieces {
		deltas[i] = contentDelta(p)
	}
	return sseBody("stop", deltas...)
}

// splitAt cuts s at random rune boundaries (a tag may be cut; a rune is
// not, since a JSON string cannot carry half of one).
func splitAt(r *rand.Rand, s string) []string {
	var out []string
	for len(s) > 0 {
		n := 1 + r.IntN(min(len(s), 12))
		if r.IntN(4) == 0 {
			n = len(s)
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// genThinkText makes a content text: a think block at the start (tagged,
// or without its opening tag), blanks around it, or no block at all, with
// text that looks like tags here and there.
func genThinkText(r *rand.Rand) string {
	bits := []string{"a", "b c", " ", "\n", "<", ">", "</", "<th", "ink", "<b>", "x</thin", "ö", "思考", "</p>", "think"}
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(bits[r.IntN(len(bits))])
		}
		return b.String()
	}
	blanks := []string{"", " ", "\n", "\n\n", " \t\r\n"}
	tags := [][2]string{{"<think>", "</think>"}, {"<thinking>", "</thinking>"}, {"<mm:think>", "</mm:think>"}}
	tag := tags[r.IntN(len(tags))]
	// Thoughts and reply must not hold the closing tag themselves.
	clean := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "</", "< /"), tag[1], "") }
	switch r.IntN(4) {
	case 0:
		return blanks[r.IntN(len(blanks))] + tag[0] + clean(text(r.IntN(20))) + tag[1] + blanks[r.IntN(len(blanks))] + text(r.IntN(20))
	case 1:
		return clean(text(r.IntN(20))) + tag[1] + blanks[r.IntN(len(blanks))] + text(r.IntN(20))
	case 2:
		return blanks[r.IntN(len(blanks))] + tag[0] + clean(text(r.IntN(20))) // never closed
	}
	return text(r.IntN(30))
}

// replyOf streams body and returns what came of it.
func replyOf(t *testing.T, body string) llm.Reply {
	t.Helper()
	s := streamOf(t, body)
	_, r, err := drain(t, s)
	if err != io.EOF {
		t.Fatalf("Recv() = %v, want the reply\nbody:\n%s", err, body)
	}
	return r
}

// However the content is split into chunks, the thoughts and the reply are
// what the text in one chunk gives; a text without a think block at its
// start comes through unchanged; a block's thoughts never show in the reply.
func TestStream_ThinkSplitProperty(t *testing.T) {
	r := propRand(t)
	for i := range 800 {
		text := genThinkText(r)
		one := replyOf(t, contentStream([]string{text}))
		pieces := splitAt(r, text)
		got := replyOf(t, contentStream(pieces))
		if got.Content != one.Content || got.Reasoning != one.Reasoning {
			t.Fatalf("#%d: %q split as %q gives reply %q, thoughts %q; in one chunk %q, %q",
				i, text, pieces, got.Content, got.Reasoning, one.Content, one.Reasoning)
		}
		trimmed := strings.TrimLeft(text, " \t\r\n")
		opens := strings.HasPrefix(trimmed, "<think>") || strings.HasPrefix(trimmed, "<thinking>") || strings.HasPrefix(trimmed, "<mm:think>")
		closes := strings.Contains(text, "</think>") || strings.Contains(text, "</thinking>") || strings.Contains(text, "</mm:think>")
		if !opens && !closes && (got.Content != text || got.Reasoning != "") {
			t.Fatalf("#%d: %q without a think block came out as reply %q, thoughts %q", i, text, got.Content, got.Reasoning)
		}
		tagCount := 0
		for _, tag := range []string{"<think>", "</think>", "<thinking>", "</thinking>", "<mm:think>", "</mm:think>"} {
			tagCount += strings.Count(text, tag)
		}
		if (opens && tagCount == 2) || (!opens && closes && tagCount == 1) { // one block; a second one after it is the reply's
			for _, tag := range []string{"<think>", "</think>", "<thinking>", "</thinking>", "<mm:think>", "</mm:think>"} {
				if strings.HasPrefix(strings.TrimLeft(got.Content, " \t\r\n"), tag) {
					t.Fatalf("#%d: %q: the reply %q starts with the tag %s", i, text, got.Content, tag)
				}
			}
		}
	}
}

// The think stage in the cases a person reads: the reply after the block,
// blanks dropped; a late tag is the reply's own text; the start of a reply
// that may be a block without its opening tag is held only up to the bound.
func TestStream_ThinkExamples(t *testing.T) {
	long := strings.Repeat("word ", 1000) // past the bound
	tests := []struct {
		name              string
		pieces            []string
		reply, thoughts   string
		reasoningContent  bool
		finishWithContent bool
	}{
		{name: "tagged", pieces: []string{"<think>\nplan\n</think>\n\nanswer"}, reply: "answer", thoughts: "plan\n"},
		{name: "tags cut", pieces: []string{"  <th", "ink>pl", "an</th", "ink>", "\n", "ans", "wer"}, reply: "answer", thoughts: "plan"},
		{name: "thinking variant", pieces: []string{"<thinking>p</thinking>a"}, reply: "a", thoughts: "p"},
		{name: "no opening tag", pieces: []string{"plan", " more\n</think>\n\nanswer"}, reply: "answer", thoughts: "plan more\n"},
		{name: "a late tag is text", pieces: []string{"Use <think> to open, ", "</think> to close."}, reply: "Use <think> to open, </think> to close."},
		{name: "past the bound", pieces: []string{long, "</think>x"}, reply: long + "</think>x"},
		{name: "never closed", pieces: []string{"<think>still thinking"}, thoughts: "still thinking"},
		{name: "only a tag's start", pieces: []string{"<thi"}, reply: "<thi"},
		{name: "blanks only", pieces: []string{"\n\n"}, reply: "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replyOf(t, contentStream(tt.pieces))
			if got.Content != tt.reply || got.Reasoning != tt.thoughts {
				t.Errorf("reply %q, thoughts %q; want %q, %q", got.Content, got.Reasoning, tt.reply, tt.thoughts)
			}
		})
	}
	// reasoning_content and a think block in content: both are thoughts,
	// in order.
	got := replyOf(t, sseBody("stop", reasoningDelta("r "), contentDelta("<think>t</think>c")))
	if got.Reasoning != "r t" || got.Content != "c" {
		t.Errorf("reasoning_content then a block: thoughts %q, reply %q", got.Reasoning, got.Content)
	}
	// Tool-call arguments are never split, whatever they hold.
	got = replyOf(t, sseBody("tool_calls", `{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"<think>x</think>"}}]}`))
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Arguments != "<think>x</think>" || got.Reasoning != "" {
		t.Errorf("arguments with tags: %+v, thoughts %q", got.ToolCalls, got.Reasoning)
	}
}

// genArgs makes a JSON object of arguments, with nesting and text that
// needs escaping.
func genArgs(r *rand.Rand, depth int) any {
	obj := map[string]any{}
	for i, n := 0, r.IntN(4); i < n; i++ {
		key := []string{"path", "limit", "q", "ö", "a b"}[r.IntN(5)]
		switch k := r.IntN(5); {
		case k == 0 && depth < 3:
			obj[key] = genArgs(r, depth+1)
		case k == 1:
			obj[key] = []any{1, "two", nil, true}
		case k == 2:
			obj[key] = r.IntN(1000)
		default:
			obj[key] = []string{"README.md", "line\nbreak", `"quoted"`, "<think>", "日本"}[r.IntN(5)]
		}
	}
	return obj
}

// toolCallEvent is one tool-call fragment with arguments raw (any JSON).
func toolCallEvent(first bool, argsRaw string) string {
	head := `"index":0`
	if first {
		head += `,"id":"call_1","type":"function","function":{"name":"read_file","arguments":` + argsRaw + `}`
	} else {
		head += `,"function":{"arguments":` + argsRaw + `}`
	}
	return `{"tool_calls":[{` + head + `}]}`
}

// Tool-call arguments as a string split anywhere, as one object, or as an
// object among empty strings and nulls, give the same arguments: the
// object's JSON.
func TestStream_ToolArgumentFormsProperty(t *testing.T) {
	r := propRand(t)
	for i := range 500 {
		want, _ := json.Marshal(genArgs(r, 0))
		var deltas []string
		switch form := r.IntN(4); form {
		case 0: // OpenAI: a string, streamed in pieces
			pieces := splitAt(r, string(want))
			deltas = append(deltas, toolCallEvent(true, `""`))
			for _, p := range pieces {
				deltas = append(deltas, toolCallEvent(false, jsonString(p)))
			}
		case 1: // the object, whole, with the name
			deltas = append(deltas, toolCallEvent(true, indentAny(r, want)))
		case 2: // empty strings and nulls around the object
			deltas = append(deltas, toolCallEvent(true, []string{`""`, "null"}[r.IntN(2)]))
			deltas = append(deltas, toolCallEvent(false, indentAny(r, want)))
			if r.IntN(2) == 0 {
				deltas = append(deltas, toolCallEvent(false, `""`))
			}
		case 3: // nulls among string pieces
			deltas = append(deltas, toolCallEvent(true, "null"))
			for _, p := range splitAt(r, string(want)) {
				deltas = append(deltas, toolCallEvent(false, jsonString(p)))
				if r.IntN(3) == 0 {
					deltas = append(deltas, toolCallEvent(false, "null"))
				}
			}
		}
		got := replyOf(t, sseBody("tool_calls", deltas...))
		if len(got.ToolCalls) != 1 {
			t.Fatalf("#%d: %d calls from %q", i, len(got.ToolCalls), deltas)
		}
		var g, w bytes.Buffer
		if err := json.Compact(&g, []byte(got.ToolCalls[0].Arguments)); err != nil {
			t.Fatalf("#%d: arguments %q are not JSON: %v (from %q)", i, got.ToolCalls[0].Arguments, err, deltas)
		}
		json.Compact(&w, want)
		if g.String() != w.String() || got.ToolCalls[0].Name != "read_file" {
			t.Fatalf("#%d: arguments %s, want %s (from %q)", i, g.String(), w.String(), deltas)
		}
	}
}

// indentAny writes a JSON value with or without white space, as servers do.
func indentAny(r *rand.Rand, v []byte) string {
	if r.IntN(2) == 0 {
		return string(v)
	}
	var b bytes.Buffer
	json.Indent(&b, v, "", " ")
	// On one line: a data line ends at a newline, and a JSON string holds
	// none unescaped.
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// A finish reason is taken by its class: a failed attempt's or an unknown
// one ends the stream with an in-stream error naming it, after the deltas
// that came with it; the others end it as a reply, in any case.
func TestStream_FinishReasonClasses(t *testing.T) {
	for _, reason := range []string{"network_error", "abort", "ERROR", "MALFORMED_FUNCTION_CALL", "insufficient_system_resource", "vendor_paused", "weird_new_reason"} {
		t.Run(reason, func(t *testing.T) {
			s := streamOf(t, sseEvents(contentDelta("half"))+
				`data: {"choices":[{"index":0,"delta":{"content":" an answer"},"finish_reason":"`+reason+`"}]}`+"\n\ndata: [DONE]\n\n")
			_, r, err := drain(t, s)
			pe, ok := errors.AsType[*llm.Error](err)
			if !ok || !pe.InStream || pe.Code != reason || pe.Type != "finish_reason" || !strings.Contains(pe.Message, reason) {
				t.Fatalf("Recv() = %v, want an in-stream error naming %q", err, reason)
			}
			if r.Content != "half an answer" || r.FinishReason != "" {
				t.Errorf("before the error: %q, finish %q; want the deltas and no finish", r.Content, r.FinishReason)
			}
		})
	}
	for reason, class := range map[string]llm.FinishClass{"stop": llm.FinishEnd, "End_Turn": llm.FinishEnd, "eos": llm.FinishEnd,
		"sensitive": llm.FinishRefused, "SAFETY": llm.FinishRefused, "max_tokens": llm.FinishTruncated, "tool_use": llm.FinishToolUse} {
		r := replyOf(t, sseBody(reason, contentDelta("x")))
		if r.FinishReason != reason || llm.ClassifyFinish(reason) != class {
			t.Errorf("%s: finish %q, class %v; want %v", reason, r.FinishReason, llm.ClassifyFinish(reason), class)
		}
	}
	// "null" written as a word is no finish: the reply goes on.
	r := replyOf(t, sseEvents(contentDelta("a"))+`data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"null"}]}`+"\n\n"+sseBody("stop"))
	if r.Content != "ab" || r.FinishReason != "stop" {
		t.Errorf(`finish_reason "null": reply %q, finish %q`, r.Content, r.FinishReason)
	}
}

// The finish table is case-blind and every class but FinishUnknown has
// entries; an unknown word is FinishUnknown, never a clean end.
func TestClassifyFinish_Table(t *testing.T) {
	for _, c := range []llm.FinishClass{llm.FinishEnd, llm.FinishToolUse, llm.FinishTruncated, llm.FinishRefused, llm.FinishFailed} {
		rs := llm.FinishReasons(c)
		if len(rs) == 0 {
			t.Errorf("no reasons of class %v", c)
		}
		for _, r := range rs {
			if llm.ClassifyFinish(strings.ToUpper(r)) != c || llm.ClassifyFinish(" "+r) != c {
				t.Errorf("%q in other cases is not %v", r, c)
			}
		}
	}
	for _, r := range []string{"", "stopped", "finish", "eot", "null"} {
		if c := llm.ClassifyFinish(r); c != llm.FinishUnknown {
			t.Errorf("ClassifyFinish(%q) = %v, want unknown", r, c)
		}
	}
}

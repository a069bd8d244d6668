package llm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/llm"
)

// A complete reply: text, a tool call, and its finish; the finish chunk and
// a trailing chunk carry the advisory fields under test.
const (
	replyText = "Here is the fix }"
	replyArgs = `{"path":"a.go"}`
)

func completeReply(onFinish, trailing string) string {
	return `data: {"choices":[{"index":0,"delta":{"content":"Here is "},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"the fix }"},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":"}}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.go\"}"}}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]` + onFinish + "}\n\n" +
		`data: {"choices":[]` + trailing + "}\n\n" +
		"data: [DONE]\n\n"
}

// checkAdvisory streams a complete reply whose finish chunk and trailing
// chunk carry the given extra members, through the real parser, and checks
// that the reply comes through whole, and any usage is within bounds.
func checkAdvisory(t *testing.T, onFinish, trailing string) {
	t.Helper()
	var logged bytes.Buffer
	log := zerolog.New(&logged)
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey,
		HTTPClient: rawDoer{200, completeReply(onFinish, trailing)}, Logger: &log})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, r, err := drain(t, s)
	if err != io.EOF {
		t.Fatalf("finish chunk with %s, then %s: Recv() = %v, want the complete reply (io.EOF)", onFinish, trailing, err)
	}
	if r.Content != replyText || r.FinishReason != llm.FinishToolCalls || len(r.ToolCalls) != 1 ||
		r.ToolCalls[0].Name != "read" || r.ToolCalls[0].Arguments != replyArgs {
		t.Fatalf("with %s, then %s: reply %q %q %+v, want the reply as sent", onFinish, trailing, r.Content, r.FinishReason, r.ToolCalls)
	}
	if u := r.Usage; u != nil {
		if u.PromptTokens < 0 || u.PromptTokens > llm.MaxUsageTokens || u.CompletionTokens < 0 || u.CompletionTokens > llm.MaxUsageTokens ||
			u.CachedTokens < 0 || u.CachedTokens > u.PromptTokens {
			t.Errorf("usage %+v out of bounds", *u)
		}
		if c := u.Cost; c != nil && !(*c >= 0 && *c <= llm.MaxUsageCost) {
			t.Errorf("cost %v out of bounds", *c)
		}
	}
	if strings.Contains(logged.String(), "SECRET") {
		t.Errorf("the warning quotes the key: %s", logged.String())
	}
}

// randJSON is a random JSON value, of a random type: what a provider may
// put where a number is expected, and more.
func randJSON(r *rand.Rand, depth int) string {
	switch r.IntN(14) {
	case 0:
		return strconv.Itoa(r.IntN(100000))
	case 1:
		return strconv.FormatFloat(r.Float64()*1000, 'f', -1, 64)
	case 2:
		return []string{"1e300", "1.7976931348623157e308", "-1e308", "1e-320", "123456789012345678901234567890", "4e298", "2.5"}[r.IntN(7)]
	case 3:
		return strconv.Itoa(-r.IntN(1000))
	case 4:
		return strconv.Quote(strconv.Itoa(r.IntN(1000)))
	case 5:
		return []string{`"NaN"`, `"Infinity"`, `"-Inf"`, `"0x10"`, `"1e400"`, `""`, `" 12 "`, `"12.0"`, `"abc"`, `"sk-test-SECRET-0123456789"`, `"1_000"`}[r.IntN(11)]
	case 6:
		return []string{"true", "false", "null"}[r.IntN(3)]
	case 7, 8:
		if depth > 2 {
			return "{}"
		}
		return randUsage(r, depth+1)
	case 9:
		if depth > 2 {
			return "[]"
		}
		return "[" + randJSON(r, depth+1) + "," + randJSON(r, depth+1) + "]"
	default:
		return strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-10)), 'g', -1, 64)
	}
}

var usageFields = []string{"prompt_tokens", "completion_tokens", "total_tokens", "cost", "prompt_tokens_details",
	"completion_tokens_details", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens", "cached_tokens", "queue_time", "usage"}

// randUsage is a usage object with random members of random types.
func randUsage(r *rand.Rand, depth int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range r.IntN(7) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(usageFields[r.IntN(len(usageFields))]) + ":" + randJSON(r, depth))
	}
	b.WriteByte('}')
	return b.String()
}

// randAdvisory is members to add to a chunk: usage, x_groq and type, each
// maybe, each of any shape.
func randAdvisory(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(4) != 0 {
		v := randUsage(r, 0)
		if r.IntN(4) == 0 {
			v = randJSON(r, 0)
		}
		b.WriteString(`,"usage":` + v)
	}
	if r.IntN(3) == 0 {
		b.WriteString(`,"x_groq":{"id":"req_1","usage":` + randUsage(r, 0) + `}`)
	}
	if r.IntN(5) == 0 {
		b.WriteString(`,"x_groq":` + randJSON(r, 0))
	}
	if r.IntN(5) == 0 {
		b.WriteString(`,"type":` + []string{`"chat.completion.chunk"`, "7", "{}", "null", `["error"]`}[r.IntN(5)])
	}
	return b.String()
}

// Usage is advisory: random usage objects, with their members' types
// mutated, on the finish chunk and after it never fail the reply; the reply
// is its content and tool call, as sent.
func TestOpenAI_AdvisoryFieldsNeverFailAReply(t *testing.T) {
	for _, tt := range [][2]string{
		{"", `,"usage":{"prompt_tokens":"12","completion_tokens":12.0,"cost":"0.001"}`},
		{`,"usage":{"prompt_tokens":{},"completion_tokens":[1]}`, ""},
		{"", `,"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":1e300}`},
		{"", `,"usage":{"prompt_tokens_details":{"cached_tokens":"many"},"prompt_tokens":5}`},
		{"", `,"usage":"unknown"`},
		{"", `,"x_groq":{"usage":{"prompt_tokens":"x"}}`},
		{"", `,"type":5`},
		// After the finish only usage is due: a broken event there is dropped.
		{"", `,"usage":{"prompt_tokens":12`},
		{"", `,"usage":{"prompt_tokens":12}}}`},
		{"", `,"choices":{"x":1}`},
	} {
		checkAdvisory(t, tt[0], tt[1])
	}
	// 300 seeds under -race: they reach every statement of the package
	// that 3000 do, and each reply is read by one goroutine.
	seeds := uint64(3000)
	if raceEnabled {
		seeds = 300
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 8))
		checkAdvisory(t, randAdvisory(r), randAdvisory(r))
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// FuzzUsage: any JSON value as a chunk's usage (and x_groq), on the finish
// chunk and after it, and any bytes at all as the usage after it, never
// fail the reply.
func FuzzUsage(f *testing.F) {
	for _, s := range []string{`{"prompt_tokens":"12"}`, `{"cost":1e300}`, `{"prompt_tokens_details":[]}`, `"x"`, `null`, `[{"a":1}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if bytes.ContainsAny(v, "\r\n") {
			return // not a value a chunk can carry on its line
		}
		onFinish := ""
		if json.Valid(v) { // else the finish chunk itself is unreadable: a malformed stream
			onFinish = `,"usage":` + string(v)
		}
		checkAdvisory(t, onFinish, `,"usage":`+string(v)+`,"x_groq":`+string(v))
	})
}

// A usage field that cannot be read is dropped with a warning naming it;
// the warning never quotes the key.
func TestOpenAI_UnreadableUsageWarns(t *testing.T) {
	var logged bytes.Buffer
	log := zerolog.New(&logged)
	body := completeReply("", `,"usage":{"prompt_tokens":{"n":1},"completion_tokens":3,"cost":"`+testKey+`"}`)
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: rawDoer{200, body}, Logger: &log})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, r, err := drain(t, s); err != io.EOF || r.Usage == nil || r.Usage.CompletionTokens != 3 || r.Usage.Cost != nil {
		t.Fatalf("drain = %+v, %v; want the reply with the readable count only", r.Usage, err)
	}
	out := logged.String()
	for _, want := range []string{`"level":"warn"`, "usage.prompt_tokens: not a number", "usage.cost: not a number", "req_raw"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("the warning quotes the key:\n%s", out)
	}
}

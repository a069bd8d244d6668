package llm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// sseBody frames deltas (each the JSON of a choices[0].delta) as an event
// stream that finishes with reason finish.
func sseBody(finish string, deltas ...string) string {
	return sseEvents(deltas...) + fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\ndata: [DONE]\n\n", finish)
}

// sseEvents frames deltas as events, without an end.
func sseEvents(deltas ...string) string {
	var b strings.Builder
	for _, d := range deltas {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
	}
	return b.String()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// bytesOf splits s into one-byte pieces.
func bytesOf(s string) []string {
	out := make([]string, len(s))
	for i := range len(s) {
		out[i] = s[i : i+1]
	}
	return out
}

// A key the provider echoes in reply text never reaches the caller, however
// the deltas cut it; text that only looks like the start of the key is
// passed on intact once the next delta shows it is not.
func TestOpenAI_KeyNotInReplyText(t *testing.T) {
	const near = "sk-test-SECRET-012345678" // the key but its last character
	redacted := func(s string) string { return strings.ReplaceAll(s, testKey, "[redacted]") }
	tests := []struct {
		name string
		step mockprovider.Step
	}{
		{"in one delta", mockprovider.Step{Text: "your key is " + testKey + ", keep it safe"}},
		{"split over two deltas", mockprovider.Step{Text: "key " + testKey + " key", Chunks: 2}},
		{"in one-byte deltas", mockprovider.Step{Text: "a " + testKey + " b " + testKey, Chunks: 1000}},
		{"at the very end", mockprovider.Step{Text: "ends with " + testKey, Chunks: 1000}},
		{"twice in a row", mockprovider.Step{Text: testKey + testKey, Chunks: 7}},
		{"in reasoning", mockprovider.Step{Reasoning: "they gave me " + testKey + " to use", Text: "ok", Chunks: 1000}},
		{"a near miss", mockprovider.Step{Text: near + " is not it, nor is " + near, Chunks: 1000}},
		{"a near miss, then the key", mockprovider.Step{Text: "sk-test-" + testKey + " sk-test-SEC", Chunks: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newMock(t, tt.step)
			s, err := p.Stream(t.Context(), hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			chunks, got, err := drain(t, s)
			if err != io.EOF {
				t.Fatalf("Recv() = %v, want io.EOF", err)
			}
			if got.Content != redacted(tt.step.Text) || got.Reasoning != redacted(tt.step.Reasoning) {
				t.Errorf("reply = %q, reasoning %q; want %q, %q", got.Content, got.Reasoning, redacted(tt.step.Text), redacted(tt.step.Reasoning))
			}
			for _, c := range chunks {
				if strings.Contains(c.Content, "SECRET-0123456789") || strings.Contains(c.Reasoning, "SECRET-0123456789") {
					t.Errorf("chunk %+v carries the key", c)
				}
			}
		})
	}
}

// Tool calls are redacted too: ids and names, which come whole, and
// arguments, which stream in pieces like text. What a call's arguments hold
// back stays that call's when the next call starts in the same slot (Ollama
// repeats index 0; Gemini sends no index).
func TestOpenAI_KeyNotInToolCalls(t *testing.T) {
	args := `{"token":"` + testKey + `","path":"sk-test-x"}`
	argDeltas := func(prefix, args string) []string {
		var out []string
		for _, b := range bytesOf(args) {
			out = append(out, `{"tool_calls":[{`+prefix+`"function":{"arguments":`+jsonString(b)+`}}]}`)
		}
		return out
	}
	tests := []struct {
		name   string
		deltas []string
		want   []llm.ToolCall
	}{
		{
			name: "indexed calls",
			deltas: slices.Concat(
				[]string{`{"tool_calls":[{"index":0,"id":"call_` + testKey + `","type":"function","function":{"name":"use_` + testKey + `"}}]}`},
				argDeltas(`"index":0,`, args),
				[]string{`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"read","arguments":` + jsonString(`{"k":"`+testKey+`"}`) + `}}]}`}),
			want: []llm.ToolCall{
				{ID: "call_[redacted]", Name: "use_[redacted]", Arguments: `{"token":"[redacted]","path":"sk-test-x"}`},
				{ID: "call_2", Name: "read", Arguments: `{"k":"[redacted]"}`},
			},
		},
		{
			name: "index 0 repeated",
			deltas: slices.Concat(
				[]string{`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"find"}}]}`},
				argDeltas(`"index":0,`, `{"q":"sk-t`),
				[]string{`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"read"}}]}`},
				argDeltas(`"index":0,`, `{"k":"`+testKey+`"}`)),
			want: []llm.ToolCall{{ID: "a", Name: "find", Arguments: `{"q":"sk-t`}, {ID: "b", Name: "read", Arguments: `{"k":"[redacted]"}`}},
		},
		{
			name: "no index",
			deltas: slices.Concat(
				[]string{`{"tool_calls":[{"id":"a","type":"function","function":{"name":"find"}}]}`},
				argDeltas(``, `{"q":"sk-t`),
				[]string{`{"tool_calls":[{"id":"b","type":"function","function":{"name":"read"}}]}`},
				argDeltas(``, `{"k":"`+testKey+`"}`)),
			want: []llm.ToolCall{{ID: "a", Name: "find", Arguments: `{"q":"sk-t`}, {ID: "b", Name: "read", Arguments: `{"k":"[redacted]"}`}},
		},
		{
			// The first fragment is all a start of the key, so none of it
			// goes out yet and the caller has no call: the next fragment
			// goes on with that call, it does not start one.
			name:   "first fragment held, indexed",
			deltas: argDeltas(`"index":0,`, testKey+`"}`),
			want:   []llm.ToolCall{{Arguments: `[redacted]"}`}},
		},
		{
			name:   "first fragment held, no index",
			deltas: append(argDeltas(``, testKey), `{"tool_calls":[{"function":{"arguments":"x"}}]}`),
			want:   []llm.ToolCall{{Arguments: `[redacted]x`}},
		},
	}
	for _, tt := range tests {
		for _, pace := range []string{"together", "one by one"} {
			t.Run(tt.name+"/"+pace, func(t *testing.T) {
				var s llm.Stream
				if pace == "together" {
					s = streamOf(t, sseBody("tool_calls", tt.deltas...))
				} else {
					s = streamApart(t, sseBody("tool_calls", tt.deltas...))
				}
				_, got, err := drain(t, s)
				if err != io.EOF {
					t.Fatalf("Recv() = %v, want io.EOF", err)
				}
				if diff := cmp.Diff(tt.want, got.ToolCalls); diff != "" {
					t.Errorf("tool calls (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// When the stream fails, a held start of the key long enough to be the key
// cut short is not passed on (it was never shown, so live mode continues
// without it); a shorter one is text, and nothing before it is lost. The
// error comes after.
func TestOpenAI_FailedStreamHeldTail(t *testing.T) {
	tests := []struct{ sent, want string }{
		{"abc sk-test-SEC", "abc "},
		{"ends sk-t", "ends "},
		{"ends sk-", "ends sk-"},
		{"such as s", "such as s"},
	}
	for _, tt := range tests {
		t.Run(tt.sent, func(t *testing.T) {
			p, _ := newMock(t, mockprovider.Step{Text: tt.sent, Chunks: 1000, DropAfter: ptr(len(tt.sent))})
			s, err := p.Stream(t.Context(), hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, got, err := drain(t, s)
			if got.Content != tt.want || !errors.Is(err, llm.ErrIncompleteStream) {
				t.Errorf("reply %q, %v; want %q, ErrIncompleteStream", got.Content, err, tt.want)
			}
		})
	}
}

// Over real HTTP, where deltas arrive however the network cuts them.
func TestOpenAI_KeyNotInReplyTextOverLoopback(t *testing.T) {
	text := strings.Repeat("x", 100) + testKey + strings.Repeat(" y", 100) + testKey
	m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Reasoning: testKey + "!", Text: text, Chunks: 1000}}})
	srv, err := mockprovider.Serve(t.Context(), "127.0.0.1:0", m)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.BaseURL(), APIKey: testKey})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, got, err := drain(t, s)
	want := llm.Reply{Reasoning: "[redacted]!", Content: strings.ReplaceAll(text, testKey, "[redacted]"), FinishReason: "stop"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(llm.Reply{}, "Usage", "Deltas"), cmpopts.IgnoreUnexported(llm.Reply{})); diff != "" || err != io.EOF {
		t.Errorf("reply (-want +got):\n%s\nerr = %v", diff, err)
	}
}

// A key too short to be a secret is left in reply text as it is, as in
// errors.
func TestOpenAI_ShortKeyNotRedactedInReplyText(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "the maximum is EMPTY", Chunks: 1000}}})
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: "EMPTY", HTTPClient: m})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, got, err := drain(t, s); got.Content != "the maximum is EMPTY" || err != io.EOF {
		t.Errorf("reply %q, %v; want it as sent", got.Content, err)
	}
}

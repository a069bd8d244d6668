package llm

import (
	"errors"
	"io"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// rawScript is a go-openai reader that returns what it was given.
type rawScript struct {
	out []rawResult
}

type rawResult struct {
	raw string
	err error
}

func (r *rawScript) RecvRaw() ([]byte, error) {
	if len(r.out) == 0 {
		return nil, io.EOF
	}
	x := r.out[0]
	r.out = r.out[1:]
	if x.raw == "" {
		return nil, x.err
	}
	return []byte(x.raw), x.err
}

func (r *rawScript) Close() error { return nil }

// tapWatching is a tap whose watch holds the error events given.
func tapWatching(intercepted ...string) *sseTap {
	tap := newTap(io.NopCloser(strings.NewReader("")), limits{})
	for _, p := range intercepted {
		tap.watch.intercept = append(tap.watch.intercept, []byte(p))
	}
	return tap
}

// The events reader alone: payloads pass; an error event go-openai
// swallowed is put back in its place, its "error, …" superseded, but a
// real read error that came with it is kept for the next call; empty
// events are skipped.
func TestEvents_PutsBackSwallowedErrors(t *testing.T) {
	apiErr := fmtErr(&openai.APIError{Message: "overloaded"})
	broke := errors.New("connection reset")
	tests := []struct {
		name  string
		raw   []rawResult
		watch []string
		want  []rawResult
	}{
		{"payloads", []rawResult{{raw: "a"}, {raw: "b"}}, nil,
			[]rawResult{{raw: "a"}, {raw: "b"}, {err: io.EOF}}},
		{"empty events skipped", []rawResult{{raw: "a"}, {}, {}, {raw: "b"}}, nil,
			[]rawResult{{raw: "a"}, {raw: "b"}, {err: io.EOF}}},
		{"go-openai's error event replaced", []rawResult{{raw: "a"}, {err: apiErr}}, []string{`{"error":{"code":429}}`},
			[]rawResult{{raw: "a"}, {raw: `{"error":{"code":429}}`}, {err: io.EOF}}},
		{"an error event go-openai returned as nothing", []rawResult{{}}, []string{`{"error":"x"}`},
			[]rawResult{{raw: `{"error":"x"}`}, {err: io.EOF}}},
		{"a read error kept for after", []rawResult{{err: broke}}, []string{`{"error":"x"}`},
			[]rawResult{{raw: `{"error":"x"}`}, {err: broke}}},
		{"go-openai's own error without the tap's copy", []rawResult{{err: apiErr}}, nil,
			[]rawResult{{err: apiErr}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := events{st: &rawScript{out: tt.raw}, tap: tapWatching(tt.watch...)}
			for i, w := range tt.want {
				raw, ok, err := e.next(true)
				if !ok || string(raw) != w.raw || err != w.err {
					t.Fatalf("next %d = %q, %v, %v; want %q, %v", i, raw, ok, err, w.raw, w.err)
				}
			}
		})
	}
}

func fmtErr(ae *openai.APIError) error { return errors.Join(errors.New("error, "), ae) }

// Without waiting, the events reader reads only events the tap has seen
// and go-openai has not returned yet.
func TestEvents_ReadyOnlyForWhatArrived(t *testing.T) {
	body := "data: {\"a\":1}\n\n: ping\ndata: {\"b\":2}\n\ndata: {\"c\""
	tap := newTap(io.NopCloser(strings.NewReader(body)), limits{})
	e := events{st: &rawScript{out: []rawResult{{raw: `{"a":1}`}, {raw: `{"b":2}`}}}, tap: tap}
	if _, ok, _ := e.next(false); ok {
		t.Fatal("nothing read from the body yet, but next(false) read an event")
	}
	if _, err := tap.Read(make([]byte, 4)); err != nil { // go-openai's bufio fills
		t.Fatal(err)
	}
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		raw, ok, err := e.next(false)
		if !ok || err != nil || string(raw) != want {
			t.Fatalf("next(false) = %q, %v, %v; want %s", raw, ok, err, want)
		}
	}
	if _, ok, _ := e.next(false); ok {
		t.Fatal("the third event is not whole, but next(false) read it")
	}
}

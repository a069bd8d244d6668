package acp

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// Each kind of line is read or refused with its code, and an id is
// substituted only while its request is readable.
func TestDecode_Kinds(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
		code int
		id   string // the refusal's id ("" for null)
		held int    // substitutes left
	}{
		{line: `{"jsonrpc":"2.0","id":1,"method":"m"}`, ok: true},
		{line: `{"jsonrpc":"2.0","id":-1,"method":"m"}`, ok: true, held: 1},
		{line: `{"jsonrpc":"2.0","id":null,"method":"m"}`, ok: true, held: 1},
		{line: `{"jsonrpc":"2.0","method":"m"}`, ok: true},
		{line: `not json`, code: CodeParseError},
		{line: `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, code: CodeInvalidRequest},
		{line: `"a string"`, code: CodeInvalidRequest},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m"`, code: CodeParseError},
		{line: `{"jsonrpc":"2.0","id":true,"method":"m"}`, code: CodeInvalidRequest},
		{line: `{"jsonrpc":"2.0","id":-1,"method":5}`, code: CodeInvalidRequest, id: "-1"},
		{line: `{"jsonrpc":"2.0","id":"x","method":5}`, code: CodeInvalidRequest, id: `"x"`},
		{line: `{"jsonrpc":"2.0","id":7,"result":{},"error":5}`}, // a response: never answered
		{line: `{"jsonrpc":"2.0","id":7,"result":1}`, ok: true},  // a response jsonrpc2 reads
	} {
		var ids idTable
		ok, r := decode([]byte(tc.line), new(jsonrpc2Message), &ids)
		if ok != tc.ok || r.code != tc.code || string(r.id) != tc.id {
			t.Errorf("decode(%s) = %v, %+v; want %v, code %d, id %q", tc.line, ok, r, tc.ok, tc.code, tc.id)
		}
		if ids.held() != tc.held {
			t.Errorf("decode(%s): %d substitutes held, want %d", tc.line, ids.held(), tc.held)
		}
	}
}

// jsonrpc2Message reads a request or a response, strictly as jsonrpc2.Conn's
// unexported anyMessage does for the cases above.
type jsonrpc2Message struct {
	req  *jsonrpc2.Request
	resp *jsonrpc2.Response
}

func (m *jsonrpc2Message) UnmarshalJSON(b []byte) error {
	var probe struct {
		Method *json.RawMessage `json:"method"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Method != nil {
		m.req = new(jsonrpc2.Request)
		return json.Unmarshal(b, m.req)
	}
	m.resp = new(jsonrpc2.Response)
	return json.Unmarshal(b, m.resp)
}

// Over generated ids: one jsonrpc2 would not carry back is substituted, the
// response written for the substitute goes out with the client's id byte
// for byte, text names it while it is held, and nothing is left after.
func TestIDTable_RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 2))
	gen := []func() string{
		func() string { return strconv.Itoa(r.IntN(1 << 20)) },
		func() string { return strconv.Itoa(-1 - r.IntN(1<<20)) },
		func() string { return strconv.FormatFloat(r.Float64()*1e6, 'f', -1, 64) },
		func() string { return "null" },
		func() string { return `"a&b<` + strconv.Itoa(r.IntN(100)) + `>"` },
		func() string { return `"\u00e9` + strconv.Itoa(r.IntN(100)) + `"` },
		func() string { return `"plain` + strconv.Itoa(r.IntN(100)) + `"` },
		func() string { return `"\u0000rebound-id:` + strconv.Itoa(r.IntN(100)) + `"` },
		func() string { return "18446744073709551615" },
	}
	var ids idTable
	for range 2000 {
		raw := gen[r.IntN(len(gen))]()
		line := `{"jsonrpc":"2.0","id":` + raw + `,"method":"m"}`
		var req jsonrpc2.Request
		ok, ref := decode([]byte(line), &req, &ids)
		if !ok {
			t.Fatalf("decode(%s) refused: %+v", line, ref)
		}
		substituted := ids.held() == 1
		if substituted == carriedAsIs(json.RawMessage(raw)) {
			t.Fatalf("id %s: substituted %v, carried as is %v", raw, substituted, carriedAsIs(json.RawMessage(raw)))
		}
		if substituted && ids.text(req.ID) != raw {
			t.Fatalf("text of the substitute for %s = %s", raw, ids.text(req.ID))
		}
		result := json.RawMessage("null")
		resp, err := json.Marshal(&jsonrpc2.Response{ID: req.ID, Result: &result})
		if err != nil {
			t.Fatal(err)
		}
		out := ids.restore(resp)
		var got struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(out, &got); err != nil || string(got.ID) != raw {
			t.Fatalf("id %s answered as %s (%v)", raw, got.ID, err)
		}
		if ids.held() != 0 {
			t.Fatalf("id %s: %d substitutes left after the response", raw, ids.held())
		}
	}
}

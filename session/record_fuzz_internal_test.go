package session

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// FuzzParseRecord: parseRecord, the fast reading of the form appendRecord
// writes, reads a line whose data is JSON to the same event parseLine
// (encoding/json) does, and takes no line parseLine refuses but for its
// data; a line whose data is no JSON is refused by the checker (Parse)
// either way. Lines appendRecord writes are read by it.
//
//	go test ./session -run '^$' -fuzz FuzzParseRecord -fuzztime 1m
func FuzzParseRecord(f *testing.F) {
	for _, ev := range []Event{
		{Seq: 1, V: 1, Time: time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC), Type: TypeSessionStart, Data: []byte(`{"sessionId":"s1","cwd":"/w"}`)},
		{Seq: 42, V: 1, Time: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), Type: TypeAssistantMessage, Data: []byte(`{"turn":1,"step":1,"text":"a \"quoted\" }} reply\n"}`)},
		{Seq: 7, V: 2, Time: time.Date(1999, 12, 31, 23, 59, 59, 1, time.UTC), Type: TypeStepEnd, Data: []byte(`{}`)},
	} {
		line, err := appendRecord(nil, ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line[:len(line)-1])
	}
	f.Add([]byte(`{"seq":01,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/start","data":{}}`))
	f.Add([]byte(`{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn\u002fstart","data":{}}`))
	f.Add([]byte(`{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"t","data":{"a":1}} `))
	f.Add([]byte(`{"seq":1,"v":1,"time":"2000-01-01T00:00:00+01:00","type":"t","data":{"a":}}`))
	f.Add([]byte(`{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"session/start","data":{"sessionId":"s","cwd":}}`))
	for _, seq := range seqForms {
		f.Add([]byte(`{"seq":` + seq + `,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/start","data":{}}`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := parseRecord(b)
		if !ok {
			return
		}
		slow, perr := parseLine(b)
		if !json.Valid(fast.Data) {
			if perr == nil {
				t.Fatalf("%q: data that is no JSON, but encoding/json reads the line", b)
			}
			if _, err := Parse(bytes.NewReader(append(b, '\n')), "f.jsonl"); err == nil {
				t.Fatalf("%q: a log of this line is accepted, with data that is no JSON", b)
			}
			return
		}
		if perr != nil {
			t.Fatalf("parseRecord took %q, which encoding/json refuses: %s", b, perr.msg)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nparseRecord %+v\nparseLine   %+v", b, fast, slow)
		}
	})
}

// Every line appendRecord writes takes the fast way.
func TestParseRecord_ReadsWhatAppendRecordWrites(t *testing.T) {
	ev := Event{Seq: 12, V: 1, Time: time.Date(2026, 12, 2, 1, 2, 3, 4, time.UTC), Type: TypeToolResult,
		Data: []byte(`{"turn":3,"toolCallId":"c1","status":"completed","output":"line\n{\"x\":1}}"}`)}
	line, err := appendRecord(nil, ev)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := parseRecord(line[:len(line)-1])
	if !ok || !reflect.DeepEqual(got, ev) {
		t.Fatalf("parseRecord(%q) = %+v, %v; want %+v", line, got, ok, ev)
	}
}

// Integers at the edges of what cutInt sums itself and what it leaves to
// strconv.
var seqForms = []string{"0", "-0", "7", "-7", "00", "-", "1e3", "1.0",
	"999999999999999999", "-999999999999999999", // 18 digits
	"9223372036854775807", "-9223372036854775808", // 19: the limits
	"9223372036854775808", "-9223372036854775809", "99999999999999999999"} // past them

// parseRecord reads seq as encoding/json does, or leaves the line to it.
func TestParseRecord_IntegersAsEncodingJSON(t *testing.T) {
	for _, seq := range seqForms {
		b := []byte(`{"seq":` + seq + `,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/start","data":{}}`)
		fast, ok := parseRecord(b)
		slow, perr := parseLine(b)
		switch {
		case ok && perr != nil:
			t.Errorf("seq %s: parseRecord takes it (%d), encoding/json refuses it: %s", seq, fast.Seq, perr.msg)
		case ok && fast.Seq != slow.Seq:
			t.Errorf("seq %s: parseRecord %d, encoding/json %d", seq, fast.Seq, slow.Seq)
		case !ok && perr == nil:
			t.Errorf("seq %s: left to encoding/json, which reads it as %d", seq, slow.Seq)
		}
	}
}

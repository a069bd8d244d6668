package session

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fixedTypes are the data types readFixed reads, each as a maker of a new
// value.
var fixedTypes = []func() any{
	func() any { return new(AssistantMessage) },
	func() any { return new(AssistantChunk) },
	func() any { return new(TurnStart) },
	func() any { return new(StepStart) },
	func() any { return new(StepEnd) },
	func() any { return new(ToolCall) },
	func() any { return new(ToolResult) },
	func() any { return new(TurnEnd) },
	func() any { return new(Compaction) },
}

// randomString mixes what a reply's text holds: ASCII, the characters
// json.Marshal escapes (quotes, backslashes, control characters, <>&,
// U+2028), other scripts, emoji (surrogate pairs when escaped) and bytes
// that are not UTF-8.
func randomString(r *rand.Rand) string {
	pieces := []string{"a", "word ", "\"", "\\", "\n", "\t", "\r", "\x00", "\x1f", "<", ">", "&", "\u2028", "\u2029",
		"é", "日本", "🙂", "\xff", "\xed\xa0\x80", "/", "\u007f", "}", "]", ",", "\ufffd", strings.Repeat("x", 40)}
	var b strings.Builder
	for range r.IntN(30) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// randomValue fills every field of the struct p points to, leaving some
// empty so that omitempty drops them.
func randomValue(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type() == reflect.TypeFor[*StepUsage]() || v.Type() == reflect.TypeFor[*float64]() || v.Type() == reflect.TypeFor[*bool]() {
			if r.IntN(3) == 0 {
				return
			}
			v.Set(reflect.New(v.Type().Elem()))
			randomValue(r, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			// The log never writes a prompt of null: that is left to
			// encoding/json.
			f := v.Type().Field(i)
			required := f.Type == reflect.TypeFor[json.RawMessage]() && !strings.Contains(f.Tag.Get("json"), "omitempty")
			if required || r.IntN(4) > 0 {
				randomValue(r, v.Field(i))
			}
		}
	case reflect.String:
		v.SetString(randomString(r))
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64N(1<<40) - 1<<20)
	case reflect.Uint64:
		v.SetUint(r.Uint64())
	case reflect.Float64:
		v.SetFloat(r.NormFloat64() * 1e3)
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			raws := []string{`[{"type":"text","text":"hi \"there\""}]`, `{"code":"RATE_LIMIT","status":429,"message":"slow down"}`, `{}`, `[]`, `[1,2.5e3,true,null,"}"]`}
			v.SetBytes([]byte(raws[r.IntN(len(raws))]))
			return
		}
		n := r.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			randomValue(r, s.Index(i))
		}
		v.Set(s)
	}
}

// What the log writes (json.Marshal of the data) is read the fast way, to
// what encoding/json reads from it.
func TestReadFixed_TakesWhatTheLogWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 2))
	for _, mk := range fixedTypes {
		for range 500 {
			v := mk()
			randomValue(r, reflect.ValueOf(v).Elem())
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			want := mk()
			if err := json.Unmarshal(b, want); err != nil {
				t.Fatal(err)
			}
			got := mk()
			if !readFixed(got, b) {
				t.Fatalf("%T: readFixed refused what json.Marshal wrote: %s", v, b)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\nreadFixed     %+v\nencoding/json %+v", b, got, want)
			}
		}
	}
}

// Data in another form is left to encoding/json, so it reads as before.
func TestDecodeObject_OtherFormsGoToEncodingJSON(t *testing.T) {
	for _, b := range []string{
		`{ "turn":1,"step":2,"messageId":"m","text":"t"}`,
		`{"Turn":1,"step":2,"messageId":"m","text":"t"}`,
		`{"step":2,"turn":1,"messageId":"m","text":"t"}`,
		`{"turn":1,"step":2,"messageId":"m","text":"t","text":"again"}`,
		`{"turn":1,"step":2,"messageId":null,"text":"t"}`,
		`{"turn":1,"step":2,"messageId":"m","text":"t","toolCalls":[]}`,
		`{"turn":1,"step":2,"messageId":"m","text":"t","extra":1}`,
		`{"turn":1.0,"step":2,"messageId":"m","text":"t"}`,
		`{"turn":1,"step":2,"messageId":"m","text":"bad \ud800 surrogate"}`,
		"{\"turn\":1,\"step\":2,\"messageId\":\"m\",\"text\":\"not utf-8 \xff\"}",
		`{"turn":1,"step":2,"messageId":"m"}`,
	} {
		if readFixed(new(AssistantMessage), []byte(b)) {
			t.Errorf("readFixed took %s", b)
		}
		want := new(AssistantMessage)
		var wantAny any = want
		if json.Unmarshal([]byte(b), want) != nil {
			wantAny = nil
		}
		got := decodeObject[AssistantMessage](Event{Data: json.RawMessage(b)})
		if !reflect.DeepEqual(got, wantAny) {
			t.Errorf("%s: decodeObject = %+v, encoding/json %+v", b, got, wantAny)
		}
	}
}

// FuzzReadFixed: whatever readFixed takes, encoding/json reads to the same
// value. The first byte picks the type.
//
//	go test ./session -run '^$' -fuzz FuzzReadFixed -fuzztime 1m
func FuzzReadFixed(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for i, mk := range fixedTypes {
		for range 3 {
			v := mk()
			randomValue(r, reflect.ValueOf(v).Elem())
			b, _ := json.Marshal(v)
			f.Add(append([]byte{byte(i)}, b...))
		}
	}
	f.Add([]byte("\x00" + `{"turn":1,"step":2,"messageId":"m","text":"\ud83d\ude42 \u00e9\"\\\/\b\f\n\r\t"}`))
	f.Add([]byte("\x04" + `{"turn":1,"step":2,"outcome":"ok","usage":{"used":18446744073709551615,"cost":-0.5e-3}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		mk := fixedTypes[int(in[0])%len(fixedTypes)]
		b := in[1:]
		got := mk()
		if !readFixed(got, b) {
			return
		}
		want := mk()
		if err := json.Unmarshal(b, want); err != nil {
			t.Fatalf("readFixed took %q, which encoding/json refuses: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nreadFixed     %+v\nencoding/json %+v", b, got, want)
		}
	})
}

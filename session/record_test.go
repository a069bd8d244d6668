package session

import (
	"encoding/json"
	"testing"
	"time"
)

// appendRecord writes exactly what json.Marshal(ev) and a newline would,
// for every event type, all sorts of times and escaped data; types it can't
// write as they are go through json.Marshal.
func TestAppendRecord_SameBytesAsMarshal(t *testing.T) {
	times := []time.Time{
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 1, 5e8, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 123456789, time.UTC),
		time.Date(2026, 3, 4, 5, 6, 7, 100, time.UTC),
		time.Now().UTC(), // with a monotonic reading outside a bubble
		time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("X", 3600)),
	}
	data := []any{
		AssistantChunk{Turn: 1, Step: 2, Text: "a\nb <&> \u2028 é \"q\" \\"},
		map[string]any{"x": []int{1, 2}, "y": nil},
		json.RawMessage(` { "spaced" : [ 1 , 2 ] , "h":"<b>" } `),
	}
	types := []string{"odd\"type<>", "tab\t", "ünicode"}
	for typ := range rules {
		types = append(types, typ)
	}
	seq := int64(1)
	for _, typ := range types {
		for _, tm := range times {
			for _, d := range data {
				b, err := json.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				ev := Event{Seq: seq, V: SchemaVersion, Time: tm, Type: typ, Data: b}
				seq = seq*7 + 3
				want, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				got, err := appendRecord([]byte("prefix"), ev)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != "prefix"+string(want)+"\n" {
					t.Errorf("appendRecord =\n%s\nwant\nprefix%s", got, want)
				}
			}
		}
	}
}

package session_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/session"
)

// FuzzParse feeds the loader arbitrary bytes. Whatever they are, Parse
// never panics, and:
//   - a refused log is refused with an *InvariantError naming the first bad
//     line: every line before it parses on its own;
//   - an accepted log keeps every good line: the events are the file's
//     lines up to a torn tail, numbered from seq 1, and nothing but that
//     tail is dropped (ValidSize + TornBytes is the whole input);
//   - what is kept parses again to the same events, with nothing torn.
//
// Seeds are in testdata/fuzz/FuzzParse. Run it with
//
//	go test ./session -run '^$' -fuzz FuzzParse -fuzztime 1m
func FuzzParse(f *testing.F) {
	f.Add([]byte(render(rStart, rTurn1, rStep1, rChunk1, rMessage1, rStepEnd1, rTurnEnd1)))
	f.Add([]byte(render(rStart, rTurn1) + `{"seq":3,"v":1,"ti`))
	f.Add([]byte(render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		ld, err := session.Parse(bytes.NewReader(data), "f.jsonl")
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if err != nil {
			ie, ok := errors.AsType[*session.InvariantError](err)
			if !ok {
				t.Fatalf("Parse error %v is not an *InvariantError", err)
			}
			if ld != nil {
				t.Fatalf("Parse returned a log with its error")
			}
			if ie.Line < 1 || ie.Line > max(len(lines), 1) || ie.Path != "f.jsonl" {
				t.Fatalf("error names line %d of %d (path %q): %v", ie.Line, len(lines), ie.Path, err)
			}
			if ie.Line == 1 {
				return
			}
			// The lines before the first bad one are good.
			prefix := bytes.Join(lines[:ie.Line-1], nil)
			pld, perr := session.Parse(bytes.NewReader(prefix), "f.jsonl")
			if perr != nil {
				t.Fatalf("error at line %d, but line %d already fails on its own: %v", ie.Line, errLine(perr), perr)
			}
			if len(pld.Events) != ie.Line-1 || pld.TornBytes != 0 {
				t.Fatalf("the %d lines before the bad one give %d events, %d torn bytes", ie.Line-1, len(pld.Events), pld.TornBytes)
			}
			return
		}
		if ld.ValidSize+ld.TornBytes != int64(len(data)) {
			t.Fatalf("kept %d bytes and dropped %d torn ones of %d: something else was lost", ld.ValidSize, ld.TornBytes, len(data))
		}
		kept := lines
		if ld.TornBytes > 0 {
			kept = lines[:len(lines)-1]
			if last := lines[len(lines)-1]; int64(len(last)) != ld.TornBytes || last[len(last)-1] == '\n' {
				t.Fatalf("dropped %d bytes, but the last line is %q", ld.TornBytes, last)
			}
		}
		if len(ld.Events) != len(kept) {
			t.Fatalf("%d events from %d kept lines", len(ld.Events), len(kept))
		}
		for i, ev := range ld.Events {
			if ev.Seq != int64(i+1) {
				t.Fatalf("event %d has seq %d", i, ev.Seq)
			}
		}
		again, err := session.Parse(bytes.NewReader(data[:ld.ValidSize]), "f.jsonl")
		if err != nil {
			t.Fatalf("what was kept does not parse again: %v", err)
		}
		if again.TornBytes != 0 || !cmp.Equal(again.Events, ld.Events) {
			t.Fatalf("what was kept parses to other events")
		}
	})
}

func errLine(err error) int {
	if ie, ok := errors.AsType[*session.InvariantError](err); ok {
		return ie.Line
	}
	return 0
}

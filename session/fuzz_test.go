package session_test

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

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
	if old, err := os.ReadFile("testdata/before_statuses.jsonl"); err == nil {
		f.Add(old) // retry chains of every outcome, from before statuses were recorded
	}
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
		checkRecoveries(t, ld.Events)
	})
}

// checkRecoveries: the one derivation of a retry's wait holds together on
// any log that parses: every llm/retry of it is in one chain, each chain
// counts its waits and sums the known ones, and replay's statuses are in
// log order.
func checkRecoveries(t *testing.T, events []session.Event) {
	retries := 0
	for _, ev := range events {
		var d session.LLMRetry
		if ev.Type == session.TypeLLMRetry && session.Unmarshal(ev.Data, &d) == nil {
			retries++
		}
	}
	n := 0
	for _, c := range session.Recoveries(events) {
		var sum time.Duration
		unknown := 0
		for _, w := range c.Waits {
			if w.Known {
				sum += w.Waited
			} else {
				unknown++
			}
			if w.Waited < 0 {
				t.Fatalf("a negative wait: %+v", w)
			}
		}
		if c.Retries != len(c.Waits) || sum != c.Waited || unknown != c.Unknown {
			t.Fatalf("chain %q: %d retries, %d waits, waited %v of %v, %d unknown of %d", c.RetryID, c.Retries, len(c.Waits), c.Waited, sum, c.Unknown, unknown)
		}
		n += c.Retries
	}
	if n != retries {
		t.Fatalf("the chains hold %d retries, the log %d", n, retries)
	}
	ws := session.WaitStatuses(events)
	for i := 1; i < len(ws); i++ {
		if ws[i].Seq <= ws[i-1].Seq {
			t.Fatalf("statuses out of log order: %d after %d", ws[i].Seq, ws[i-1].Seq)
		}
	}
}

func errLine(err error) int {
	if ie, ok := errors.AsType[*session.InvariantError](err); ok {
		return ie.Line
	}
	return 0
}

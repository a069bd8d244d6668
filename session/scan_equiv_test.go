package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// scanBefore is scan as it was before it was split into named steps, kept
// while the refactor is checked against it.
func scanBefore(r io.Reader, name string, c *checker, firstLine int, join, settled bool, ld *Loaded) (int, error) {
	var run chunkRun
	next, shared, err := lineReader(r)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	lines := 0
	for lineNo := firstLine; ; lineNo++ {
		line, err := next()
		if err != nil && err != io.EOF {
			return 0, fmt.Errorf("read %s: %w", name, err)
		}
		if len(line) == 0 {
			break // clean end: the last line had its newline
		}
		terminated := line[len(line)-1] == '\n'
		if !terminated && !settled {
			ld.HeldBack = true
			break
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		if !terminated && !json.Valid(body) {
			// Records are written whole with one Write each, so an
			// unterminated line that is not JSON is a write cut short.
			ld.TornBytes = int64(len(line))
			ld.Warnings = append(ld.Warnings, fmt.Sprintf("%s:%d: dropped a torn last line (%d bytes, no newline): the write was cut short", name, lineNo, len(line)))
			break
		}
		ev, ok := parseRecord(body)
		if !ok {
			var perr *lineError
			if ev, perr = parseLine(body); perr != nil {
				return 0, &InvariantError{Path: name, Line: lineNo, Seq: perr.seq, Msg: perr.msg}
			}
		}
		// A chunk is decoded once, for the checker and the join: a long
		// reply is mostly chunk lines.
		// Every event's data is decoded once, for the checker and, in
		// Data, for whoever derives from the log (History.Add checks it
		// again without decoding it again).
		data := eventData(ev)
		chunk, _ := data.(*AssistantChunk)
		c.typed = data
		err = c.check(ev)
		c.typed = nil
		if err != nil {
			return 0, err
		}
		if !join || !run.join(ld.Events, ev, chunk) {
			run.end(ld.Events)
			if shared {
				// Keep what this event needs of the line, not the
				// whole read.
				ev.Data = bytes.Clone(ev.Data)
			}
			ld.Events = append(ld.Events, ev)
			ld.Data = append(ld.Data, data)
			run.start(ld.Events, chunk)
		}
		ld.ValidSize += int64(len(line))
		lines++
		if !terminated {
			ld.Unterminated = true
			ld.Warnings = append(ld.Warnings, fmt.Sprintf("%s:%d: last line is complete but has no newline", name, lineNo))
			break
		}
	}
	run.end(ld.Events)
	return lines, nil
}

// snapshotLogBytes is the first session log each golden transcript
// recorded, as its lines.
func snapshotLogBytes(t *testing.T) [][]byte {
	paths, err := filepath.Glob(filepath.Join("..", "snapshots", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no snapshots: %v", err)
	}
	var logs [][]byte
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Dir   string          `json:"dir"`
				Event json.RawMessage `json:"event"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil || line.Dir != "log" || line.Event == nil {
				continue
			}
			if bytes.HasPrefix(line.Event, []byte(`{"seq":1,`)) && log.Len() > 0 {
				break
			}
			log.Write(line.Event)
			log.WriteByte('\n')
		}
		f.Close()
		if log.Len() > 0 {
			logs = append(logs, log.Bytes())
		}
	}
	return logs
}

// scan reads every golden log, whole and damaged (cut anywhere, a byte
// changed, the last newline dropped), settled or not, joined or not, from
// a file or a stream, as it did before its refactor.
func TestScan_SameAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 12))
	for _, log := range snapshotLogBytes(t) {
		for v := range 8 {
			b := bytes.Clone(log)
			switch {
			case v == 1:
				b = bytes.TrimSuffix(b, []byte("\n"))
			case v > 1 && v%3 == 0:
				b = b[:r.IntN(len(b))]
			case v > 1 && v%3 == 1:
				b[r.IntN(len(b))] = "x{\"\n0 "[r.IntN(6)]
			}
			for _, join := range []bool{false, true} {
				for _, settled := range []bool{false, true} {
					reader := func() io.Reader {
						if v%2 == 0 {
							return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
						}
						return bytes.NewReader(b)
					}
					got, want := &Loaded{}, &Loaded{}
					gn, gerr := scan(reader(), "log", newChecker("log"), 1, join, settled, got)
					wn, werr := scanBefore(reader(), "log", newChecker("log"), 1, join, settled, want)
					if gn != wn || fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
						t.Fatalf("scan(%q, join %v, settled %v) = %d, %v, %+v; before %d, %v, %+v", b, join, settled, gn, gerr, got, wn, werr, want)
					}
				}
			}
		}
	}
}

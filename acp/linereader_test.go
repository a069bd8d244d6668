package acp

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/testkit"
)

// tooLongMark stands for a line read as too long.
const tooLongMark = "\x00"

// Over generated inputs (lines of every length around the limit and the
// read chunk, CRLF, blanks, a last line without '\n'): each line comes back
// trimmed, or as too long exactly when it is over the limit, in order, and
// the buffer stays within the limit plus a chunk.
func TestLineReader_Property(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	for round := range testkit.Cases(120, 30) {
		limit := 1 + r.IntN(2*readChunk)
		in, want := genLines(r, limit)
		lr := newLineReader(in, limit)
		got, err := readAllLines(lr)
		if err != nil {
			t.Fatalf("round %d (limit %d): %v", round, limit, err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d (limit %d): %d lines, want %d", round, limit, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d (limit %d): line %d is %d bytes (%.8q), want %d (%.8q)", round, limit, i, len(got[i]), got[i], len(want[i]), want[i])
			}
		}
	}
}

// genLines returns an input of a few lines of sizes around limit and
// readChunk, and what reading it gives (tooLongMark for a line over limit).
func genLines(r *rand.Rand, limit int) (*bytes.Buffer, []string) {
	var in bytes.Buffer
	var want []string
	n := 1 + r.IntN(6)
	for i := range n {
		sizes := []int{limit, limit + 1, r.IntN(2 * limit), r.IntN(3 * readChunk)}
		body := strings.Repeat(string(rune('a'+i)), sizes[r.IntN(len(sizes))])
		line := body
		if r.IntN(3) == 0 {
			line += "\r" // part of the line's length, trimmed after
		}
		in.WriteString(line)
		last := i == n-1 && r.IntN(2) == 0
		if !last {
			in.WriteByte('\n')
		}
		switch {
		case last && line == "":
			// nothing to read
		case len(line) > limit:
			want = append(want, tooLongMark)
		default:
			want = append(want, body)
		}
	}
	return &in, want
}

// readAllLines reads lr to its end, failing if its buffer grows past the
// limit plus two chunks or a too-long line comes back with bytes.
func readAllLines(lr *lineReader) ([]string, error) {
	var got []string
	for {
		line, tooLong, err := lr.readLine()
		if cap(lr.buf) > lr.limit+2*readChunk {
			return got, errorf("buffer grew to %d", cap(lr.buf))
		}
		switch {
		case tooLong && line != nil:
			return got, errorf("a too-long line came back with %d bytes", len(line))
		case tooLong:
			got = append(got, tooLongMark)
		case len(line) > 0 || err == nil:
			got = append(got, string(line))
		}
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

package acp

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// Over generated inputs (lines of every length around the limit and the
// read chunk, CRLF, blanks, a last line without '\n'): each line comes back
// trimmed, or as too long exactly when it is over the limit, in order, and
// the buffer stays within the limit plus a chunk.
func TestLineReader_Property(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	for round := range 120 {
		limit := 1 + r.IntN(2*readChunk)
		var in bytes.Buffer
		var want []string // "" + tooLong marker as "\x00"
		n := 1 + r.IntN(6)
		for i := range n {
			var size int
			switch r.IntN(4) {
			case 0:
				size = limit
			case 1:
				size = limit + 1
			case 2:
				size = r.IntN(2 * limit)
			default:
				size = r.IntN(3 * readChunk)
			}
			body := strings.Repeat(string(rune('a'+i)), size)
			line := body
			if r.IntN(3) == 0 {
				line += "\r" // part of the line's length, trimmed after
			}
			in.WriteString(line)
			last := i == n-1 && r.IntN(2) == 0
			if !last {
				in.WriteByte('\n')
			}
			if last && line == "" {
				break // nothing to read
			}
			if len(line) > limit {
				want = append(want, "\x00")
			} else {
				want = append(want, body)
			}
		}
		lr := newLineReader(&in, limit)
		var got []string
		for {
			line, tooLong, err := lr.readLine()
			if cap(lr.buf) > limit+2*readChunk {
				t.Fatalf("round %d: buffer grew to %d for limit %d", round, cap(lr.buf), limit)
			}
			switch {
			case tooLong:
				if line != nil {
					t.Fatalf("round %d: a too-long line came back with %d bytes", round, len(line))
				}
				got = append(got, "\x00")
			case len(line) > 0 || err == nil:
				got = append(got, string(line))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
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

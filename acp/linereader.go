package acp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader splits the input into lines of at most limit bytes (excluding
// the '\n'), reusing one buffer: memory per line is bounded by the limit
// plus the bufio.Reader's readChunk, whatever the client sends.
type lineReader struct {
	r     *bufio.Reader
	limit int
	buf   []byte // the current line; reused, never much over limit
}

func newLineReader(r io.Reader, limit int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, readChunk), limit: limit}
}

// readLine returns the next line without its line ending and surrounding
// whitespace. A line over the limit is consumed to its end but not kept:
// tooLong is set and line is nil. err is set with the last (possibly
// unterminated) line or alone.
func (lr *lineReader) readLine() (line []byte, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	if cap(lr.buf) > 4*readChunk {
		lr.buf = nil // don't pin a big earlier line's memory for the session
	}
	for {
		frag, err := lr.r.ReadSlice('\n')
		if !tooLong {
			n := len(lr.buf) + len(frag)
			if err == nil {
				n-- // the '\n' doesn't count
			}
			if n > lr.limit {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, frag...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && tooLong:
			return nil, true, err
		case tooLong:
			return nil, true, nil
		default:
			return bytes.TrimSpace(lr.buf), false, err
		}
	}
}

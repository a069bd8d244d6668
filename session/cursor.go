package session

import (
	"bytes"
	"io"
)

// cursor is how much of its file a Log has read or written (whole lines):
// size bytes, lines lines, and tail, the last of those bytes (up to
// tailCheck). The next read goes on at size if the file still ends there
// with tail; otherwise the file was changed under the Log (replaced,
// truncated, rewritten), and is read again whole.
type cursor struct {
	size  int64
	lines int
	tail  []byte
}

// tailCheck is how many of the last bytes read or written are compared
// with the file before reading on after them: enough to hold the end of
// the last record, with its seq-dependent data and time.
const tailCheck = 256

// reset forgets what was read, so the next read takes the whole file.
func (c *cursor) reset() { c.size, c.lines, c.tail = 0, 0, nil }

// continues reports whether f, now size bytes long, still holds what the
// cursor read or wrote, so reading on at c.size reads only what was
// appended since. A cursor at the start continues any file.
func (c *cursor) continues(f io.ReaderAt, size int64) bool {
	if c.size == 0 {
		return true
	}
	if size < c.size {
		return false
	}
	b, err := readTail(f, c.size)
	return err == nil && bytes.Equal(b, c.tail)
}

// wrote moves the cursor past b, just written at its end.
func (c *cursor) wrote(b []byte) {
	c.size += int64(len(b))
	c.lines += bytes.Count(b, []byte{'\n'})
	c.tail = keepTail(c.tail, b)
}

// readTo moves the cursor to size, after a read of lines more lines of f
// that ended there, and keeps f's bytes before it as the tail.
func (c *cursor) readTo(f io.ReaderAt, size int64, lines int) error {
	c.lines += lines
	if size == c.size {
		return nil
	}
	c.size = size
	var err error
	c.tail, err = readTail(f, size)
	return err
}

// readTail reads the last tailCheck (or fewer) bytes before size.
func readTail(f io.ReaderAt, size int64) ([]byte, error) {
	n := min(size, tailCheck)
	b := make([]byte, n)
	_, err := f.ReadAt(b, size-n)
	return b, err
}

// keepTail is the last tailCheck bytes of t followed by b.
func keepTail(t, b []byte) []byte {
	if len(b) >= tailCheck {
		return append(t[:0], b[len(b)-tailCheck:]...)
	}
	if over := len(t) + len(b) - tailCheck; over > 0 {
		t = t[over:]
	}
	return append(t, b...)
}

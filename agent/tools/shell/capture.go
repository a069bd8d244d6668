package shell

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// capture keeps the first half and the last half of a byte stream whose total
// size is unknown, in memory fixed by the limit. It is written by one
// goroutine and read only after that goroutine has finished.
type capture struct {
	head  []byte // the first len ≤ cap(head) bytes
	ring  []byte // the last bytes after head, circular once full
	pos   int    // next write index in ring
	full  bool   // ring has wrapped at least once
	total int64  // bytes written, shown or not
}

func newCapture(limit int) *capture {
	h := limit / 2
	return &capture{head: make([]byte, 0, h), ring: make([]byte, limit-h)}
}

func (c *capture) write(p []byte) {
	c.total += int64(len(p))
	if n := min(cap(c.head)-len(c.head), len(p)); n > 0 {
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(c.ring) == 0 || len(p) == 0 {
		return
	}
	if len(p) >= len(c.ring) {
		// Only the last len(ring) bytes can survive.
		copy(c.ring, p[len(p)-len(c.ring):])
		c.pos, c.full = 0, true
		return
	}
	n := copy(c.ring[c.pos:], p)
	if n < len(p) {
		copy(c.ring, p[n:])
		c.full = true
	}
	c.pos = (c.pos + len(p)) % len(c.ring)
	if c.pos == 0 && len(p) > 0 {
		c.full = true
	}
}

// tail returns the bytes after head in order.
func (c *capture) tail() []byte {
	if !c.full {
		return c.ring[:c.pos]
	}
	t := make([]byte, 0, len(c.ring))
	t = append(t, c.ring[c.pos:]...)
	return append(t, c.ring[:c.pos]...)
}

// result is the captured output as valid UTF-8 and whether any was omitted.
func (c *capture) result() (string, bool) {
	tail := c.tail()
	shown := int64(len(c.head) + len(tail))
	if shown == c.total {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD"), false
	}
	// Cut at rune boundaries so the seams do not turn a rune the program
	// wrote correctly into replacement characters.
	head := trimPartialRuneEnd(c.head)
	tail = trimPartialRuneStart(tail)
	omitted := c.total - int64(len(head)) - int64(len(tail))

	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(string(head), "\uFFFD"))
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %d bytes of output omitted ...]\n", omitted)
	b.WriteString(strings.ToValidUTF8(string(tail), "\uFFFD"))
	return b.String(), true
}

// trimPartialRuneEnd drops an incomplete UTF-8 sequence at the end of b, one
// that was cut off, not one that is invalid in itself.
func trimPartialRuneEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// trimPartialRuneStart drops the continuation bytes at the start of b that
// belong to a rune begun before it: at most three, the tail of a four-byte
// rune.
func trimPartialRuneStart(b []byte) []byte {
	i := 0
	for i < utf8.UTFMax-1 && i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return b[i:]
}

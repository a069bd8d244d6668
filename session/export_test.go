package session

import "io"

// WrapWriter makes l write its file through wrap(w), where w is what it
// wrote through so far, so a test can count or fail the writes.
func WrapWriter(l *Log, wrap func(w io.Writer) io.Writer) { l.WrapWriter(wrap) }

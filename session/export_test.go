package session

import (
	"io"
	"os"
)

// WrapWriter makes l write its file through wrap(w), where w is what it
// wrote through so far, so a test can count or fail the writes.
func WrapWriter(l *Log, wrap func(w io.Writer) io.Writer) { l.WrapWriter(wrap) }

// LockFile takes a session log's lock on f, as another Rebound process would.
func LockFile(f *os.File) error { return lockFile(f) }

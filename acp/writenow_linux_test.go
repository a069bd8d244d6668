//go:build linux

package acp_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rebound-agent/rebound/acp"
)

// readable is how many bytes wait in the pipe f reads.
func readable(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	}); err != nil || ierr != nil {
		t.Fatal(err, ierr)
	}
	return n
}

// On an idle stream over stdout, whose reader has read everything, the
// line is in the pipe when WriteObject returns: the caller wrote it, no
// goroutine was woken for it.
func TestLineStream_IdleStdoutWrittenByCaller(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	s := acp.NewLineStream(acp.StdioConn(strings.NewReader(""), pw), acp.StreamConfig{})
	for i := range 20 {
		v := map[string]any{"jsonrpc": "2.0", "method": "m", "params": map[string]int{"n": i}}
		if err := s.WriteObject(v); err != nil {
			t.Fatal(err)
		}
		want := lineOf(t, v)
		if n := readable(t, pr); n != len(want) {
			t.Fatalf("after WriteObject %d: %d bytes in the pipe, want %d", i, n, len(want))
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(pr, got); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// When the pipe is full (nobody reads), WriteObject still returns at once,
// the writer goroutine takes over, and every line comes out whole and in
// order once it is read; lines too long to write directly go the same way.
func TestLineStream_FullStdoutDoesNotBlockWriters(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	s := acp.NewLineStream(acp.StdioConn(strings.NewReader(""), pw), acp.StreamConfig{})
	var want strings.Builder
	for i := range 400 { // ~400 KiB: several times a pipe's buffer
		v := map[string]string{"n": fmt.Sprint(i), "s": strings.Repeat("x", 1000+i%7*1000)}
		if err := s.WriteObject(v); err != nil {
			t.Fatal(err)
		}
		want.WriteString(lineOf(t, v))
	}
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(pr)
		read <- b
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if got := <-read; string(got) != want.String() {
		t.Errorf("output: %d bytes, want %d, or not in order", len(got), want.Len())
	}
}

// Over a regular file (stdout redirected to one), whose emptiness can't be
// told, the poll says it is writable: the caller writes each line.
func TestLineStream_FileStdoutWrittenByCaller(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := acp.NewLineStream(acp.StdioConn(strings.NewReader(""), f), acp.StreamConfig{})
	var want strings.Builder
	for i := range 20 {
		v := map[string]int{"n": i}
		if err := s.WriteObject(v); err != nil {
			t.Fatal(err)
		}
		want.WriteString(lineOf(t, v))
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("after WriteObject %d the file holds %q, want %q", i, got, want.String())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

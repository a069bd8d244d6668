package acp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
)

// xs reads as n bytes of 'x' without holding them in memory: with
// io.MultiReader it stands for a client sending a huge line.
type xs struct{ n int }

func (r *xs) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

type rwc struct {
	io.Reader
	io.Writer
}

func (rwc) Close() error { return nil }

// A line far over the limit is discarded as it streams in: reading past it
// allocates about the limit plus the read buffer, not the line.
func TestLineStream_OverlongLineIsNotBuffered(t *testing.T) {
	const lineBytes = 64 << 20
	in := io.MultiReader(&xs{n: lineBytes}, strings.NewReader("\n"+`{"jsonrpc":"2.0","id":1,"method":"m"}`+"\n"))
	var out bytes.Buffer
	s := acp.NewLineStream(rwc{in, &out}, acp.StreamConfig{MaxLineBytes: 1 << 10})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var got map[string]any
	err := s.ReadObject(&got)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("ReadObject() = %v", err)
	}
	if err := s.Close(); err != nil { // writes the refusal
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("reading past a %d MiB line allocated %d bytes; the line was buffered", lineBytes>>20, alloc)
	}
	if diff := cmp.Diff(map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "m"}, got); diff != "" {
		t.Errorf("object after the long line (-want +got):\n%s", diff)
	}
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: line longer than 1024 bytes"}}` + "\n"
	if out.String() != want {
		t.Errorf("output = %q, want %q", out.String(), want)
	}
}

// Lines at the limit pass; one byte more is refused. The line ending is
// not counted.
func TestLineStream_LimitIsExact(t *testing.T) {
	const limit = 100
	obj := func(n int) string { // a JSON object of exactly n bytes
		pre := `{"jsonrpc":"2.0","method":"m","params":"`
		return pre + strings.Repeat("a", n-len(pre)-2) + `"}`
	}
	tests := []struct {
		name    string
		line    string
		refused bool
	}{
		{"at the limit", obj(limit), false},
		{"at the limit with CRLF", obj(limit-1) + "\r", false},
		{"one over", obj(limit + 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			s := acp.NewLineStream(rwc{strings.NewReader(tt.line + "\n"), &out}, acp.StreamConfig{MaxLineBytes: limit})
			var got json.RawMessage
			err := s.ReadObject(&got)
			if tt.refused {
				if err != io.EOF || !strings.Contains(out.String(), `"code":-32700`) {
					t.Errorf("ReadObject() = %v, output %q; want io.EOF after a -32700 refusal", err, out.String())
				}
				return
			}
			if err != nil || out.Len() != 0 {
				t.Errorf("ReadObject() = %v, output %q; want the line", err, out.String())
			}
		})
	}
}

// A last line without '\n' is still read, then io.EOF.
func TestLineStream_UnterminatedLastLine(t *testing.T) {
	s := acp.NewLineStream(rwc{strings.NewReader(`{"a":1}`), io.Discard}, acp.StreamConfig{})
	var got map[string]any
	if err := s.ReadObject(&got); err != nil {
		t.Fatalf("ReadObject() = %v", err)
	}
	if err := s.ReadObject(&got); err != io.EOF {
		t.Fatalf("second ReadObject() = %v, want io.EOF", err)
	}
}

// pipeRWC is a stream whose output is an io.Pipe; Close closes the pipe,
// as closing a real connection would.
type pipeRWC struct {
	io.Reader
	*io.PipeWriter
}

package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/rebound-agent/rebound/acp"
)

// Concurrent writers each produce whole lines, in the order each wrote
// them, and share Writes.
func TestLineStream_WriteObjectWholeLines(t *testing.T) {
	var w countingWriter
	s := acp.NewLineStream(rwc{strings.NewReader(""), &w}, acp.StreamConfig{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				if err := s.WriteObject(map[string]any{"n": i, "j": j, "s": "a\nb<c>"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if w.writes > 400 {
		t.Errorf("%d writes for 400 messages, want at most 400", w.writes)
	}
	next := make([]int, 8) // each writer's next j
	for line := range strings.Lines(w.buf.String()) {
		var v struct{ N, J int }
		if err := json.Unmarshal([]byte(line), &v); err != nil || !strings.HasSuffix(line, "}\n") {
			t.Fatalf("bad line %q: %v", line, err)
		}
		if v.J != next[v.N] {
			t.Fatalf("writer %d: line %d after %d", v.N, v.J, next[v.N]-1)
		}
		next[v.N]++
	}
	for i, n := range next {
		if n != 50 {
			t.Errorf("writer %d: %d lines out, want 50", i, n)
		}
	}
}

type countingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

// gatedWriter is an output whose Writes each wait for a value on gate (or
// its close), or fail with err once it is set.
type gatedWriter struct {
	gate chan struct{}

	mu     sync.Mutex
	buf    bytes.Buffer
	writes []string
	err    error
}

func newGatedWriter() *gatedWriter { return &gatedWriter{gate: make(chan struct{})} }

func (w *gatedWriter) Write(p []byte) (int, error) {
	<-w.gate
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.writes = append(w.writes, string(p))
	return w.buf.Write(p)
}

func (w *gatedWriter) output() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String(), len(w.writes)
}

// lineOf is what WriteObject writes for v: json.Marshal's bytes and '\n'.
func lineOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// The bytes are json.Marshal's, escaping included, and an idle stream
// writes a line at once, with nothing left running afterwards (the bubble
// would fail on a goroutine left behind).
func TestLineStream_IdleLineWrittenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGatedWriter()
		close(w.gate)
		s := acp.NewLineStream(rwc{strings.NewReader(""), w}, acp.StreamConfig{})
		v := map[string]any{"jsonrpc": "2.0", "method": "m", "params": map[string]any{"s": "a\nb <&> \u2028 é \"q\""}}
		if err := s.WriteObject(v); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the writer goroutine has written and ended
		if out, n := w.output(); out != lineOf(t, v) || n != 1 {
			t.Errorf("output = %q in %d writes, want %q in 1", out, n, lineOf(t, v))
		}
		// No Close: an idle stream holds no goroutine.
	})
}

// Lines written while a Write is in progress go out together in the next
// one, in order.
func TestLineStream_CoalescesBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGatedWriter()
		s := acp.NewLineStream(rwc{strings.NewReader(""), w}, acp.StreamConfig{})
		var want strings.Builder
		for i := range 100 {
			v := map[string]int{"n": i}
			if err := s.WriteObject(v); err != nil {
				t.Fatal(err)
			}
			want.WriteString(lineOf(t, v))
			if i == 0 {
				synctest.Wait() // the writer has taken line 0 and waits in Write
			}
		}
		close(w.gate)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		out, n := w.output()
		if out != want.String() {
			t.Errorf("output:\n%s\nwant:\n%s", out, want.String())
		}
		if n != 2 {
			t.Errorf("%d writes for a line and a burst of 99, want 2", n)
		}
	})
}

// A failed Write is returned by the next WriteObject, and by every later
// one without writing, and by Close.
func TestLineStream_WriteErrorIsReturnedNext(t *testing.T) {
	errGone := errors.New("client gone")
	synctest.Test(t, func(t *testing.T) {
		w := newGatedWriter()
		w.err = errGone
		close(w.gate)
		counted := &countingWriter{}
		s := acp.NewLineStream(rwc{strings.NewReader(""), io.MultiWriter(counted, w)}, acp.StreamConfig{})
		if err := s.WriteObject(map[string]int{"n": 1}); err != nil {
			t.Fatalf("first WriteObject = %v; its Write comes later", err)
		}
		synctest.Wait()
		for i := range 3 {
			if err := s.WriteObject(map[string]int{"n": 2}); !errors.Is(err, errGone) {
				t.Errorf("WriteObject %d after the failure = %v, want %v", i+2, err, errGone)
			}
		}
		if err := s.Close(); !errors.Is(err, errGone) {
			t.Errorf("Close() = %v, want %v", err, errGone)
		}
		if counted.writes != 1 {
			t.Errorf("%d writes, want 1: nothing is written after a failure", counted.writes)
		}
	})
}

// Close waits for what is pending to be written.
func TestLineStream_CloseFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGatedWriter()
		s := acp.NewLineStream(rwc{strings.NewReader(""), w}, acp.StreamConfig{})
		var want strings.Builder
		for i := range 10 {
			v := map[string]int{"n": i}
			if err := s.WriteObject(v); err != nil {
				t.Fatal(err)
			}
			want.WriteString(lineOf(t, v))
		}
		closed := make(chan error)
		go func() { closed <- s.Close() }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close() = %v before the output was written", err)
		default:
		}
		close(w.gate)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if out, _ := w.output(); out != want.String() {
			t.Errorf("output after Close:\n%s\nwant:\n%s", out, want.String())
		}
		if err := s.WriteObject(map[string]int{"n": 11}); err == nil {
			t.Error("WriteObject after Close = nil, want an error")
		}
	})
}

// If nobody reads the output, Close gives up after its timeout, closes the
// connection (which fails the blocked Write) and returns; nothing is left
// running.
func TestLineStream_CloseIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, pw := io.Pipe() // nobody reads
		s := acp.NewLineStream(pipeRWC{strings.NewReader(""), pw}, acp.StreamConfig{})
		if err := s.WriteObject(map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := s.Close()
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Close() = %v, want the failed write (%v)", err, io.ErrClosedPipe)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("Close took %v, want 5s", d)
		}
	})
}

// When closing the connection doesn't unblock the Write either, Close
// still returns, and says so.
func TestLineStream_CloseGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGatedWriter() // never opened until the end
		s := acp.NewLineStream(rwc{strings.NewReader(""), w}, acp.StreamConfig{})
		if err := s.WriteObject(map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := s.Close()
		if err == nil || !strings.Contains(err.Error(), "not written") {
			t.Errorf("Close() = %v, want an error saying the output was not written", err)
		}
		if d := time.Since(start); d != 6*time.Second {
			t.Errorf("Close took %v, want 6s", d)
		}
		close(w.gate) // let the writer end, or the bubble fails
	})
}

// A slow reader makes writers wait once 4 MiB is pending, instead of the
// stream growing without limit.
func TestLineStream_PendingIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGatedWriter()
		s := acp.NewLineStream(rwc{strings.NewReader(""), w}, acp.StreamConfig{})
		big := map[string]string{"s": strings.Repeat("x", 1<<20)} // a line of 1 MiB and a few bytes
		if err := s.WriteObject(big); err != nil {                // taken by the writer, which blocks
			t.Fatal(err)
		}
		synctest.Wait()
		for range 3 { // 3 MiB pending
			if err := s.WriteObject(big); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error)
		go func() { done <- s.WriteObject(big) }() // would make over 4 MiB
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("WriteObject over the cap returned %v at once, want it to wait", err)
		default:
		}
		w.gate <- struct{}{} // the first Write returns; the writer takes the 3 MiB
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		close(w.gate)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if out, n := w.output(); len(out) != 5*len(lineOf(t, big)) || n != 3 {
			t.Errorf("%d bytes in %d writes, want %d in 3", len(out), n, 5*len(lineOf(t, big)))
		}
	})
}

// Once the input has ended, ReadObject has waited for the output so far,
// and WriteObject returns only when its line is written: the connection is
// closing, and whoever waits for the last writers must know they are out.
func TestLineStream_WritesAreSynchronousAfterInputEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGatedWriter()
		s := acp.NewLineStream(rwc{strings.NewReader(""), w}, acp.StreamConfig{})
		if err := s.WriteObject(map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
		read := make(chan error)
		go func() {
			var v any
			read <- s.ReadObject(&v)
		}()
		synctest.Wait()
		select {
		case err := <-read:
			t.Fatalf("ReadObject() = %v before the pending output was written", err)
		default:
		}
		w.gate <- struct{}{}
		if err := <-read; err != io.EOF {
			t.Fatalf("ReadObject() = %v, want io.EOF", err)
		}

		wrote := make(chan error)
		go func() { wrote <- s.WriteObject(map[string]int{"n": 2}) }()
		synctest.Wait()
		select {
		case err := <-wrote:
			t.Fatalf("WriteObject after the input ended = %v before its line was written", err)
		default:
		}
		w.gate <- struct{}{}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		if out, n := w.output(); out != "{\"n\":1}\n{\"n\":2}\n" || n != 2 {
			t.Errorf("output %q in %d writes", out, n)
		}
		close(w.gate)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// slowWriter takes a millisecond of (fake) time per Write.
type slowWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *slowWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// When Serve returns, everything is written, the reply of a turn cancelled
// by the shutdown included, whether the input ended or ctx was cancelled:
// the process may exit right after.
func TestLineStream_ServeReturnsAfterOutputIsWritten(t *testing.T) {
	for _, how := range []string{"input ends", "ctx cancelled"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
					for _, s := range []string{"a", "b", "c"} {
						if err := c.Update(ctx, req.SessionID, textUpdate(s)); err != nil {
							return acp.PromptResponse{}, err
						}
					}
					<-ctx.Done()
					c.Update(ctx, req.SessionID, textUpdate("last words"))
					return acp.PromptResponse{}, context.Cause(ctx)
				}}
				ctx, cancel := context.WithCancel(t.Context())
				inR, inW := io.Pipe()
				out := &slowWriter{}
				done := make(chan error)
				go func() { done <- acp.NewServer(agent, acp.Config{}).Serve(ctx, inR, out) }()
				if _, err := io.WriteString(inW, initializeLine+"\n"+prompt(1, "s", "hi")+"\n"); err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // the turn waits for ctx
				if how == "input ends" {
					inW.Close()
				} else {
					cancel()
				}
				<-done
				got := out.String() // at once: Serve has returned
				cancel()
				var texts []string
				var reply string
				for line := range strings.Lines(got) {
					var m struct {
						Method string
						Params struct {
							Update struct{ Content struct{ Text string } }
						}
						Result json.RawMessage
					}
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Fatalf("bad line %q: %v", line, err)
					}
					if m.Method != "" {
						texts = append(texts, m.Params.Update.Content.Text)
					} else {
						reply = string(m.Result)
					}
				}
				if diff := cmp.Diff([]string{"a", "b", "c", "last words"}, texts); diff != "" {
					t.Errorf("updates written when Serve returned (-want +got):\n%s", diff)
				}
				if reply != `{"stopReason":"cancelled"}` {
					t.Errorf("reply written when Serve returned: %q, want the cancelled result\noutput:\n%s", reply, got)
				}
			})
		})
	}
}

// captured records the objects a jsonrpc2.Conn hands its stream.
type captured struct {
	mu   sync.Mutex
	objs []any
	done chan struct{}
}

func (c *captured) WriteObject(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objs = append(c.objs, v)
	return nil
}

func (c *captured) ReadObject(any) error { <-c.done; return io.EOF }
func (c *captured) Close() error         { return nil }

// capture returns the objects jsonrpc2.Conn hands WriteObject (its own
// unexported message type) for what send sends.
func capture(tb testing.TB, send func(context.Context, *jsonrpc2.Conn) error) []any {
	tb.Helper()
	c := &captured{done: make(chan struct{})}
	conn := jsonrpc2.NewConn(context.Background(), c, jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) {
		return nil, nil
	}))
	defer func() { close(c.done); <-conn.DisconnectNotify() }()
	if err := send(context.Background(), conn); err != nil {
		tb.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.objs
}

// What jsonrpc2.Conn sends is written as json.Marshal writes it, byte for
// byte, though WriteObject skips re-marshaling its messages.
func TestLineStream_JSONRPC2MessagesAsMarshal(t *testing.T) {
	tricky := "a\nb <&> \u2028\u2029 é \"q\" \\ \t}{ ]["
	objs := capture(t, func(ctx context.Context, conn *jsonrpc2.Conn) error {
		raw := json.RawMessage(` { "spaced" : [ 1 , 2 ] , "h" : "<b>" } `)
		data := json.RawMessage(`{"s":"` + "\u003c" + `"}`)
		return errors.Join(
			conn.Notify(ctx, acp.MethodSessionUpdate, acp.SessionNotification{SessionID: "s", Update: textUpdate(tricky)}),
			conn.Notify(ctx, "x", raw),
			conn.Notify(ctx, "x", nil),
			conn.Reply(ctx, jsonrpc2.ID{Num: 7}, map[string]any{"stopReason": tricky}),
			conn.Reply(ctx, jsonrpc2.ID{Str: "<id>", IsString: true}, nil),
			conn.ReplyWithError(ctx, jsonrpc2.ID{Num: 8}, &jsonrpc2.Error{Code: -32603, Message: tricky, Data: &data}),
		)
	})
	objs = append(objs, &jsonrpc2.Request{Method: tricky, ID: jsonrpc2.ID{Num: 1}})
	var w countingWriter
	s := acp.NewLineStream(rwc{strings.NewReader(""), &w}, acp.StreamConfig{})
	var want strings.Builder
	for _, v := range objs {
		if err := s.WriteObject(v); err != nil {
			t.Fatal(err)
		}
		want.WriteString(lineOf(t, v))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.buf.String(); got != want.String() {
		t.Errorf("output:\n%s\nwant (json.Marshal):\n%s", got, want.String())
	}
	if len(objs) != 7 {
		t.Errorf("%d messages, want 7", len(objs))
	}
}

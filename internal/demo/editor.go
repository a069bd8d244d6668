package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/rebound-agent/rebound/acp"
)

// editor is the editor's end of ACP: a jsonrpc2.Conn over the agent's
// stdio. Its handler answers the agent's requests at once (session/
// request_permission with allow once, anything else with method not
// found) and queues what the editor shows on events, in the order the
// agent sent it: session updates, the permission requests answered, and
// the answers to the demo's own requests.
type editor struct {
	rpc    *jsonrpc2.Conn
	stream *lineStream
	events chan event
	done   chan struct{} // closed by close: nothing more is queued
	once   sync.Once
}

// event is one thing the agent sent, in order; one member is set.
type event struct {
	update     *acp.SessionUpdate            // session/update
	permission *acp.RequestPermissionRequest // session/request_permission, answered with chosen
	chosen     acp.PermissionOption          // the option the demo chose for permission
	answer     *answer                       // the answer to a request of the demo's
}

// answer is the outcome of a request the demo sent: its result, or the
// agent's error (a *jsonrpc2.Error), or jsonrpc2.ErrClosed when the
// connection ended first.
type answer struct {
	method string
	result json.RawMessage
	err    error
}

var _ jsonrpc2.Handler = (*editor)(nil)

// newClient speaks ACP over the agent's stdout (r) and stdin (w); closing
// the client closes w. The connection ends with ctx.
func newEditor(ctx context.Context, r io.Reader, w io.WriteCloser) *editor {
	c := &editor{
		stream: &lineStream{r: bufio.NewReaderSize(r, 64<<10), w: w},
		events: make(chan event, 64),
		done:   make(chan struct{}),
	}
	// The demo reports a broken connection itself (see exitErr).
	c.rpc = jsonrpc2.NewConn(ctx, c.stream, c, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	return c
}

// Handle is the editor's side of the agent's requests and notifications.
// It runs on the connection's reader, so the events it queues keep the
// agent's order, and an answer to the demo's requests (queued once the
// reader has passed it) comes after everything the agent sent before it.
func (c *editor) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		if req.Method != acp.MethodSessionUpdate || req.Params == nil {
			return
		}
		var n acp.SessionNotification
		if json.Unmarshal(*req.Params, &n) == nil {
			c.queue(event{update: &n.Update})
		}
		return
	}
	if req.Method != acp.MethodSessionRequestPermission {
		// The demo offers no other client methods (no file system, no
		// terminal); the agent must not be left waiting.
		_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "the demo client does not offer " + req.Method})
		return
	}
	// The demo plays a user who clicks "Allow"; a bad request still gets
	// allow_once.
	var p acp.RequestPermissionRequest
	if req.Params != nil {
		_ = json.Unmarshal(*req.Params, &p)
	}
	chosen := allowOnce(p.Options)
	_ = conn.Reply(ctx, req.ID, acp.RequestPermissionResponse{
		Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionSelected, OptionID: chosen.OptionID},
	})
	c.queue(event{permission: &p, chosen: chosen})
}

// allowOnce is the option the demo picks when the agent asks permission,
// what a user clicking "Allow" picks: the one of kind allow_once, else the
// optionId "allow_once".
func allowOnce(options []acp.PermissionOption) acp.PermissionOption {
	for _, o := range options {
		if o.Kind == acp.PermissionAllowOnce {
			return o
		}
	}
	return acp.PermissionOption{OptionID: string(acp.PermissionAllowOnce), Name: "Allow", Kind: acp.PermissionAllowOnce}
}

// queue hands ev to whoever reads events, unless the client is closed.
func (c *editor) queue(ev event) {
	select {
	case c.events <- ev:
	case <-c.done:
	}
}

// send sends a request; its answer is queued on events.
func (c *editor) send(method string, params any) error {
	w, err := c.rpc.DispatchCall(context.Background(), method, params)
	if err != nil {
		return c.sendError(method, err)
	}
	go func() {
		var raw json.RawMessage
		// Wait returns when the answer has been read or the connection
		// has ended (ErrClosed), which close brings about.
		err := w.Wait(context.Background(), &raw)
		c.queue(event{answer: &answer{method: method, result: raw, err: err}})
	}()
	return nil
}

// notify sends a notification.
func (c *editor) notify(method string, params any) error {
	if err := c.rpc.Notify(context.Background(), method, params); err != nil {
		return c.sendError(method, err)
	}
	return nil
}

// sendError is why a message could not be sent: the connection had ended
// (exitErr), or writing to the agent's stdin failed: it exited, or is
// closing its end (a broken pipe).
func (c *editor) sendError(method string, err error) error {
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return fmt.Errorf("%s: %w", method, c.exitErr())
	}
	return fmt.Errorf("%s: writing to the agent: %w: %w", method, errAgentExited, err)
}

// call sends a request and waits for its answer into result, dropping the
// session updates that come meanwhile (permission requests are answered).
func (c *editor) call(ctx context.Context, method string, params, result any) error {
	if err := c.send(method, params); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", method, context.Cause(ctx))
		case ev := <-c.events:
			if ev.answer == nil {
				continue
			}
			if err := c.answerError(ev.answer); err != nil {
				return err
			}
			return json.Unmarshal(ev.answer.result, result)
		}
	}
}

// answerError is why a request got no result: the agent's error, or the
// connection's end (exitErr); nil for a result.
func (c *editor) answerError(a *answer) error {
	var rerr *jsonrpc2.Error
	switch {
	case a.err == nil:
		return nil
	case errors.As(a.err, &rerr):
		return fmt.Errorf("%s: error %d: %s", a.method, rerr.Code, rerr.Message)
	case errors.Is(a.err, jsonrpc2.ErrClosed):
		return fmt.Errorf("%s: %w", a.method, c.exitErr())
	}
	return fmt.Errorf("%s: %w", a.method, a.err)
}

// exitErr is why the connection ended: a line that is not JSON-RPC, else
// the agent's exit (errAgentExited).
func (c *editor) exitErr() error {
	if line, ok := c.stream.badLine(); ok {
		return fmt.Errorf("the agent wrote a line that is not JSON-RPC: %q", line)
	}
	return errAgentExited
}

// close ends the connection and closes the agent's stdin, which ends its
// serve loop. Idempotent.
func (c *editor) close() {
	c.once.Do(func() {
		close(c.done)
		c.rpc.Close()
	})
}

// errAgentExited: the agent closed its stdout.
var errAgentExited = errors.New("the agent exited")

// lineStream is the demo's jsonrpc2.ObjectStream: one JSON-RPC message a
// line each way (ACP's stdio transport). Unlike acp.LineStream, the
// agent's, which answers a line it cannot read and reads on, it stops at
// the first line that is not a JSON-RPC message: the agent under
// demonstration wrote something no editor could read, and the demo says
// so (client.exitErr).
type lineStream struct {
	r *bufio.Reader
	w io.WriteCloser

	mu  sync.Mutex
	bad *string // the line that stopped the reading
}

func (s *lineStream) ReadObject(v any) error {
	for {
		line, err := s.r.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if json.Unmarshal(t, v) != nil {
				bad := string(t)
				s.mu.Lock()
				s.bad = &bad
				s.mu.Unlock()
				return errNotJSONRPC
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errNotJSONRPC ends the connection at a line that is not JSON-RPC.
var errNotJSONRPC = errors.New("a line that is not JSON-RPC")

func (s *lineStream) badLine() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad == nil {
		return "", false
	}
	return *s.bad, true
}

// WriteObject writes v as one line: json.Marshal escapes newlines inside
// strings. jsonrpc2.Conn serialises its writes.
func (s *lineStream) WriteObject(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.w.Write(append(b, '\n'))
	return err
}

// Close closes the agent's stdin; its stdout ends when it exits.
func (s *lineStream) Close() error { return s.w.Close() }

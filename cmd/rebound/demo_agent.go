package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// demoAgent is the rebound child the demo drives as an editor would: ACP
// over its stdin and stdout, one JSON-RPC message a line.
type demoAgent struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	msgs   chan demoMsg // closed when the agent's stdout ends
	done   chan struct{}
	stderr *demoTail
	nextID int

	stopOnce sync.Once
	waitErr  error
}

// demoMsg is one JSON-RPC message from the agent.
type demoMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error,omitempty"`

	bad string // a line that is not JSON-RPC
}

// isResponse reports whether m answers the request with id.
func (m demoMsg) isResponse(id int) bool {
	return m.Method == "" && string(m.ID) == strconv.Itoa(id)
}

// demoTail keeps the end of the agent's stderr, to show when it fails.
type demoTail struct {
	mu sync.Mutex
	b  []byte
}

const demoTailMax = 16 << 10

func (t *demoTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*demoTailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-demoTailMax:]...)
	}
	return len(p), nil
}

// lastLines is up to n last lines of stderr.
func (t *demoTail) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startDemoAgent spawns path with no arguments (it serves ACP) and env.
func startDemoAgent(ctx context.Context, path string, env []string) (*demoAgent, error) {
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = env
	cmd.WaitDelay = 2 * time.Second
	a := &demoAgent{cmd: cmd, msgs: make(chan demoMsg, 64), done: make(chan struct{}), stderr: &demoTail{}}
	cmd.Stderr = a.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a.stdin = stdin
	go a.read(stdout)
	return a, nil
}

func (a *demoAgent) read(stdout io.Reader) {
	defer close(a.msgs)
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var m demoMsg
			if json.Unmarshal(t, &m) != nil {
				m = demoMsg{bad: string(t)}
			}
			select {
			case a.msgs <- m:
			case <-a.done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// send writes one message; id < 0 makes it a notification.
func (a *demoAgent) send(id int, method string, params any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id >= 0 {
		msg["id"] = id
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = a.stdin.Write(append(b, '\n'))
	return err
}

// request sends a request and returns its id.
func (a *demoAgent) request(method string, params any) (int, error) {
	id := a.nextID
	a.nextID++
	return id, a.send(id, method, params)
}

// demoAllowOnce is the option the demo picks when the agent asks
// permission: what a user clicking "Allow" picks.
const demoAllowOnce = "allow_once"

// demoPermissionRequest is the part of session/request_permission's params
// the demo reads.
type demoPermissionRequest struct {
	ToolCall struct {
		ToolCallID string `json:"toolCallId"`
		Title      string `json:"title"`
	} `json:"toolCall"`
	Options []struct {
		OptionID string `json:"optionId"`
		Name     string `json:"name"`
		Kind     string `json:"kind"`
	} `json:"options"`
}

// allowOnce is the option to pick: the one of kind allow_once, else the
// optionId "allow_once". name is its label, for the output.
func (p demoPermissionRequest) allowOnce() (id, name string) {
	for _, o := range p.Options {
		if o.Kind == demoAllowOnce {
			return o.OptionID, o.Name
		}
	}
	return demoAllowOnce, "Allow"
}

// answer answers a request from the agent, so that it is never left
// waiting: session/request_permission with allow once (the demo plays a
// user who clicks "Allow"), anything else with method not found, since the
// demo offers no other client methods (no file system, no terminal).
// picked is the option chosen for a permission request, "" otherwise.
func (a *demoAgent) answer(m demoMsg) (picked string, err error) {
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if m.Method == "session/request_permission" {
		var p demoPermissionRequest
		_ = json.Unmarshal(m.Params, &p) // a bad request still gets allow_once
		picked, _ = p.allowOnce()
		reply["result"] = map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": picked}}
	} else {
		reply["error"] = map[string]any{"code": -32601, "message": "the demo client does not offer " + m.Method}
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return "", err
	}
	_, err = a.stdin.Write(append(b, '\n'))
	return picked, err
}

// errAgentExited: the agent closed its stdout.
var errAgentExited = errors.New("the agent exited")

// writeError is a failed write to the agent's stdin: it exited, or is
// closing its end (a broken pipe).
func (a *demoAgent) writeError(method string, err error) error {
	return fmt.Errorf("%s: writing to the agent: %w: %w", method, errAgentExited, err)
}

// call sends a request and waits for its answer, answering the agent's own
// requests and dropping notifications meanwhile.
func (a *demoAgent) call(ctx context.Context, method string, params any, result any) error {
	id, err := a.request(method, params)
	if err != nil {
		return a.writeError(method, err)
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", method, context.Cause(ctx))
		case m, ok := <-a.msgs:
			switch {
			case !ok:
				return fmt.Errorf("%s: %w", method, errAgentExited)
			case m.bad != "":
				return fmt.Errorf("%s: the agent wrote a line that is not JSON-RPC: %q", method, m.bad)
			case m.isResponse(id):
				if m.Error != nil {
					return fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
				}
				return json.Unmarshal(m.Result, result)
			case m.Method != "" && len(m.ID) > 0:
				if _, err := a.answer(m); err != nil {
					return a.writeError(m.Method+" (the answer)", err)
				}
			}
		}
	}
}

// stop closes the agent's stdin, which ends its serve loop, and waits for
// it to exit; after grace it is killed. Idempotent.
func (a *demoAgent) stop(grace time.Duration) error {
	a.stopOnce.Do(func() {
		a.stdin.Close()
		exited := make(chan error, 1)
		go func() { exited <- a.cmd.Wait() }()
		select {
		case a.waitErr = <-exited:
		case <-time.After(grace):
			a.cmd.Process.Kill()
			a.waitErr = <-exited
		}
		close(a.done)
	})
	return a.waitErr
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"testing"
)

// inProcess is Rebound serving ACP in this process over pipes, driven as an
// editor drives it: call sends a request and returns its answer.
type inProcess struct {
	t      *testing.T
	in     *io.PipeWriter
	outR   *io.PipeReader
	out    *bufio.Scanner
	shown  bytes.Buffer // every line the editor was sent, up to the last answer read
	mu     sync.Mutex   // guards stderr, which Rebound writes as it runs
	stderr bytes.Buffer
	done   chan int
}

func serveInProcess(t *testing.T, e env) *inProcess {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &inProcess{t: t, in: inW, outR: outR, done: make(chan int, 1)}
	go func() {
		p.done <- runEnv(t.Context(), nil, inR, outW, lockedWriter{&p.mu, &p.stderr}, e)
		outW.Close()
	}()
	p.out = bufio.NewScanner(io.TeeReader(outR, &p.shown))
	p.out.Buffer(nil, 16<<20)
	return p
}

// call sends a request and returns its answer; notifications before it are
// kept in shown.
func (p *inProcess) call(id int, method string, params map[string]any) map[string]any {
	p.t.Helper()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	p.in.Write(append(line, '\n'))
	for p.out.Scan() {
		var m map[string]any
		json.Unmarshal(p.out.Bytes(), &m)
		if got, ok := m["id"].(float64); ok && int(got) == id && m["method"] == nil {
			return m
		}
	}
	p.t.Fatalf("%s: no answer; stderr:\n%s", method, p.logs())
	return nil
}

// newSession initializes and opens a session in cwd, returning its id.
func (p *inProcess) newSession(cwd string) string {
	p.t.Helper()
	p.call(0, "initialize", map[string]any{"protocolVersion": 1})
	res, _ := p.call(1, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["result"].(map[string]any)
	sid, _ := res["sessionId"].(string)
	return sid
}

// prompt sends a one-line prompt to session sid as request id.
func (p *inProcess) prompt(id int, sid, text string) map[string]any {
	p.t.Helper()
	return p.call(id, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
}

// end closes the editor's side, as an editor quitting does, and waits for
// Rebound to exit; it returns the exit code.
func (p *inProcess) end() int {
	p.in.Close()
	go io.Copy(io.Discard, p.outR)
	return <-p.done
}

// logs is what Rebound wrote to stderr so far.
func (p *inProcess) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

package demo

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// process is the rebound child the demo drives as an editor would: ACP over
// its stdin and stdout (client), its stderr kept for when it fails.
type process struct {
	cmd    *exec.Cmd
	client *editor
	stderr *tail

	stopOnce sync.Once
	waitErr  error
}

// startAgent spawns path with no arguments (it serves ACP) and env, and
// connects to it. The connection ends with ctx, and the process is killed.
func startAgent(ctx context.Context, path string, env []string) (*process, error) {
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = env
	cmd.WaitDelay = 2 * time.Second
	p := &process{cmd: cmd, stderr: &tail{}}
	cmd.Stderr = p.stderr
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
	p.client = newEditor(ctx, stdout, stdin)
	return p, nil
}

// stop closes the connection, and with it the agent's stdin, which ends
// its serve loop, and waits for it to exit; after grace it is killed.
// Idempotent.
func (p *process) stop(grace time.Duration) error {
	p.stopOnce.Do(func() {
		p.client.close()
		exited := make(chan error, 1)
		go func() { exited <- p.cmd.Wait() }()
		select {
		case p.waitErr = <-exited:
		case <-time.After(grace):
			p.cmd.Process.Kill()
			p.waitErr = <-exited
		}
	})
	return p.waitErr
}

// tail keeps the end of the agent's stderr, to show when it fails.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 16 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

// lastLines is up to n last lines of stderr.
func (t *tail) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/internal/text"
)

const (
	// stderrKeep is how much of a server's stderr is kept for error messages;
	// the rest goes to the debug log line by line and is forgotten.
	stderrKeep = 4 << 10
	// stderrLineMax bounds one logged stderr line; a longer line is logged in
	// pieces.
	stderrLineMax = 1 << 10
	// stderrDrain is how long an exit message waits for the last of stderr
	// after the server has exited: a child that inherited the pipe may keep it
	// open indefinitely.
	stderrDrain = 500 * time.Millisecond
	// killWait bounds the wait for a SIGKILLed process to be reaped; only a
	// process stuck in the kernel takes longer.
	killWait = 5 * time.Second
)

// process is a running stdio server. Its three pipes are os.Pipes owned here
// rather than exec's StdinPipe/StdoutPipe, so that reaping the process (which
// happens as soon as it exits, to notice a crash) never closes a pipe the SDK
// is still reading, and Close can break a write blocked on a full pipe.
type process struct {
	p      *proc.Process
	pid    int
	stdin  *os.File // our end; closing it is how a server is asked to exit
	stdout *os.File // our end; the SDK reads it and closes it with the session
	stderr *tail

	exited     chan struct{} // closed once the process has been reaped
	waitErr    error         // cmd.Wait's result; read only after exited
	stderrDone chan struct{} // closed when every writer of stderr has gone
}

// startProcess runs the server's command in dir with Rebound's environment
// without secrets, plus the spec's variables (the editor gave those on
// purpose). Its stderr is logged at debug and never reaches Rebound's own
// stdout or stderr: stdout is the ACP connection.
func startProcess(sp Spec, dir string, secrets proc.Secrets, log zerolog.Logger) (*process, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}

	env := proc.Environ(secrets, dir) // PWD in step with dir
	for _, kv := range sp.Env {
		env = append(env, kv.Name+"="+kv.Value) // the last value of a name wins
	}
	pr, err := proc.Start(proc.Cmd{Name: sp.Command, Args: sp.Args, Dir: dir, Env: env, Stdin: inR, Stdout: outW, Stderr: errW})
	if err != nil {
		closeAll()
		return nil, err
	}
	// The child has its own copies; ours would keep its stdin open and hide
	// the end of its stdout and stderr.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	p := &process{
		p:          pr,
		pid:        pr.Pid(),
		stdin:      inW,
		stdout:     outR,
		stderr:     &tail{},
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		p.readStderr(errR, log)
	}()
	go func() {
		_, p.waitErr = pr.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) readStderr(f *os.File, log zerolog.Logger) {
	r := bufio.NewReaderSize(f, stderrLineMax)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			p.stderr.write(line)
			if s := strings.TrimRight(string(line), "\r\n"); s != "" {
				log.Debug().Str("stderr", strings.ToValidUTF8(s, "\uFFFD")).Msg("MCP server stderr")
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// waitExit reports whether the process exited within d.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// kill ends the server and everything it started at once, for a server
// that failed to start or stopped answering.
func (p *process) kill() { p.p.Kill() }

// stop asks the server to exit the way the MCP spec describes: close its
// stdin, wait, SIGTERM, wait, SIGKILL. The final kill happens even when the
// server exited by itself, for children it left behind (under a reaper
// those are already gone). It returns once the server has been reaped.
func (p *process) stop(grace time.Duration) error {
	_ = p.stdin.Close() // also unblocks a write stuck on a full pipe
	if !p.waitExit(grace) {
		p.p.Terminate()
		p.waitExit(grace)
	}
	p.p.Kill()
	if !p.waitExit(killWait) {
		return fmt.Errorf("process %d did not exit after SIGKILL", p.pid)
	}
	return nil
}

// exitReason describes how the process ended ("exit status 1", "signal:
// killed") and returns the last line it wrote to stderr, which is usually
// the reason ("Error: GITHUB_TOKEN is not set"). Call it only after exited
// is closed.
func (p *process) exitReason() (status, lastLine string) {
	status = "exit status 0"
	if p.waitErr != nil {
		status = p.waitErr.Error()
	}
	t := time.NewTimer(stderrDrain)
	defer t.Stop()
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
	return status, p.stderr.lastLine()
}

// tail keeps the last stderrKeep bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*stderrKeep { // trim in batches: amortised copying
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-stderrKeep:]...)
	}
}

// lastLine returns the last non-empty line, made safe to show a person: valid
// UTF-8, no control characters, at most maxLineShown bytes.
func (t *tail) lastLine() string {
	t.mu.Lock()
	b := bytes.TrimRight(t.buf, " \t\r\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	s := string(b)
	t.mu.Unlock()
	return printable(s, maxLineShown)
}

// maxLineShown bounds a line quoted from a server in an error message.
const maxLineShown = 512

// printable makes text from a server fit for an error message: valid UTF-8,
// control characters (terminal escapes included) replaced by spaces, cut to
// at most max bytes on a rune boundary, and trimmed.
func printable(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = text.Prefix(s, max-len("…")) + "…"
	}
	return s
}

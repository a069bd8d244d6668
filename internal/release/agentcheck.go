package release

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// What the registry's CI gives an agent (verify_agents.py, client.py).
const (
	// AuthTimeout is how long verify_agents.py --auth-check waits for the
	// initialize response.
	AuthTimeout = 120 * time.Second
	// LaunchTimeout is how long the launch check lets the agent run with
	// stdin closed.
	LaunchTimeout = 10 * time.Second
	// terminateGrace is how long a terminated agent gets before it is killed.
	terminateGrace = 2 * time.Second
)

// authPassthrough are the only variables of the CI's own environment the
// auth check passes on (client.py's AGENT_ENV_PASSTHROUGH): an agent that
// needs any other, or a key, fails there.
var authPassthrough = []string{
	"CI", "COMSPEC", "NPM_CONFIG_CACHE", "NODE_EXTRA_CA_CERTS", "PATH", "PATHEXT",
	"PYTHON_KEYRING_BACKEND", "PYTHON_KEYRING_DISABLED", "REQUESTS_CA_BUNDLE",
	"SSL_CERT_DIR", "SSL_CERT_FILE", "SystemRoot", "TMP", "TMPDIR", "TEMP",
	"UV_CACHE_DIR", "WINDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
}

// initializeRequest is client.py's request, byte for byte in content: a
// client with fs and terminal, and terminal auth advertised the pre-v1 way
// (_meta), not as clientCapabilities.auth.terminal.
const initializeRequest = `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"}, "clientCapabilities": {"terminal": true, "fs": {"readTextFile": true, "writeTextFile": true}, "_meta": {"terminal_output": true, "terminal-auth": true}}}}` + "\n"

// Launch is how the registry starts an extracted binary: Path with Args,
// in Dir (the extraction directory), with the manifest's Env added.
type Launch struct {
	Path string
	Args []string
	Dir  string
	Env  map[string]string
}

// AuthMethod is an initialize authMethods entry with its type as the
// registry infers it.
type AuthMethod struct {
	ID   string
	Type string
}

// AuthResult is what the auth check saw.
type AuthResult struct {
	Methods   []AuthMethod
	AgentName string
	Version   string
}

// AuthCheck is verify_agents.py --auth-check: it starts the agent with
// the CI's environment (only authPassthrough, TERM=dumb, HOME a directory
// of its own under sandbox, PATH led by the sandbox's bin directories),
// sends one initialize and reads one line within timeout. The line must be
// JSON, not an error, and list an auth method of type agent or terminal.
func AuthCheck(ctx context.Context, l Launch, sandbox string, timeout time.Duration) (AuthResult, error) {
	home := filepath.Join(sandbox, "auth-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return AuthResult{}, err
	}
	cmd := exec.CommandContext(ctx, l.Path, l.Args...)
	cmd.Dir = l.Dir
	cmd.Env = envList(authEnv(l, sandbox, home))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return AuthResult{}, err
	}
	// A pipe of our own rather than StdoutPipe: Wait then need not wait
	// for the read that may still be blocked when the check gives up.
	outR, outW, err := os.Pipe()
	if err != nil {
		return AuthResult{}, err
	}
	defer outR.Close()
	cmd.Stdout = outW
	var stderr tail
	cmd.Stderr = &stderr
	p, err := start(cmd)
	outW.Close()
	if err != nil {
		return AuthResult{}, err
	}
	defer p.terminate()

	if _, err := io.WriteString(stdin, initializeRequest); err != nil {
		return AuthResult{}, withStderr(fmt.Errorf("writing initialize: %w", err), &stderr)
	}
	var got []byte
	select {
	case got = <-firstLine(outR):
	case <-time.After(timeout):
		return AuthResult{}, withStderr(fmt.Errorf("no initialize response within %v", timeout), &stderr)
	case <-ctx.Done():
		return AuthResult{}, ctx.Err()
	}
	if len(bytes.TrimSpace(got)) == 0 {
		p.terminate()
		return AuthResult{}, withStderr(fmt.Errorf("stdout closed before the initialize response (%v)", p.exit), &stderr)
	}
	var resp initializeResponse
	if err := json.Unmarshal(got, &resp); err != nil {
		return AuthResult{}, fmt.Errorf("the agent wrote something other than a JSON-RPC message to stdout (ACP allows nothing else there): %q", bytes.TrimSpace(got))
	}
	if resp.Error != nil {
		return AuthResult{}, withStderr(fmt.Errorf("initialize failed: %s", resp.Error), &stderr)
	}
	return resp.authResult()
}

// authEnv is the CI's environment for the auth check: only
// authPassthrough, TERM=dumb, HOME, the launch's own variables, and PATH
// led by the sandbox's bin directories.
func authEnv(l Launch, sandbox, home string) map[string]string {
	env := map[string]string{}
	for _, name := range authPassthrough {
		if v := os.Getenv(name); v != "" {
			env[name] = v
		}
	}
	env["TERM"] = "dumb"
	env["HOME"] = home
	for k, v := range sanitizeEnv(l.Env) {
		env[k] = v
	}
	env["PATH"] = strings.Join([]string{filepath.Join(home, ".local", "bin"), filepath.Join(sandbox, "node_modules", ".bin"), env["PATH"]}, string(os.PathListSeparator))
	return env
}

// firstLine reads r's first line in the background: what was read when r
// ended first.
func firstLine(r io.Reader) <-chan []byte {
	line := make(chan []byte, 1)
	go func() {
		b, _ := bufio.NewReader(r).ReadBytes('\n')
		line <- b
	}()
	return line
}

// initializeResponse is the part of the answer to initialize the auth
// check reads.
type initializeResponse struct {
	Error  json.RawMessage `json:"error"`
	Result struct {
		AuthMethods []struct {
			ID   string         `json:"id"`
			Type string         `json:"type"`
			Meta map[string]any `json:"_meta"`
		} `json:"authMethods"`
		AgentInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"agentInfo"`
	} `json:"result"`
}

// authResult reads the auth methods as the registry types them; one must
// be of type agent or terminal.
func (resp *initializeResponse) authResult() (AuthResult, error) {
	res := AuthResult{AgentName: resp.Result.AgentInfo.Name, Version: resp.Result.AgentInfo.Version}
	usable := false
	for _, m := range resp.Result.AuthMethods {
		typ := authType(m.Type, m.Meta)
		res.Methods = append(res.Methods, AuthMethod{ID: m.ID, Type: typ})
		usable = usable || typ == "agent" || typ == "terminal"
	}
	switch {
	case len(res.Methods) == 0:
		return res, errors.New("initialize lists no authMethods; the registry wants one of type agent or terminal")
	case !usable:
		return res, fmt.Errorf("no auth method of type agent or terminal among %v", res.Methods)
	}
	return res, nil
}

// authType is an auth method's type as client.py infers it: the type,
// else a _meta key naming one, else agent.
func authType(typ string, meta map[string]any) string {
	if typ != "" {
		return typ
	}
	if _, ok := meta["terminal-auth"]; ok {
		return "terminal"
	}
	return "agent"
}

// LaunchCheck is verify_agents.py's launch test: the agent runs with the
// CI's whole environment and stdin closed, and must still be running after
// timeout or have exited with status 0. The registry also passes an agent
// that fails with words like "stdin" or "credential" in its output; this
// check does not.
func LaunchCheck(ctx context.Context, l Launch, timeout time.Duration) error {
	cmd := exec.CommandContext(ctx, l.Path, l.Args...)
	cmd.Dir = l.Dir
	cmd.Env = os.Environ()
	for k, v := range l.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Stdin stays nil: the null device, as Python's DEVNULL.
	var stderr tail
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	p, err := start(cmd)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
		if p.exit != nil {
			return withStderr(fmt.Errorf("with stdin closed the agent exited within %v: %w", timeout, p.exit), &stderr)
		}
		return nil
	case <-time.After(timeout):
		p.terminate()
		return nil // still running: waiting for a client, as it should
	case <-ctx.Done():
		p.terminate()
		return ctx.Err()
	}
}

// process is a started command and its exit.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once exit is set
	exit error
}

func start(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.exit = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// terminate asks the process to stop, as the CI does, kills it after a
// grace period, and waits for it. Windows has no SIGTERM; there it is
// killed at once.
func (p *process) terminate() {
	select {
	case <-p.done:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
	case <-time.After(terminateGrace):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// sanitizeEnv drops what a manifest's env may not set
// (registry_utils.sanitize_agent_env): the runner's plumbing and
// credentials.
func sanitizeEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		if k == "" || reservedEnv(k) {
			continue
		}
		out[k] = v
	}
	return out
}

func reservedEnv(name string) bool {
	name = strings.TrimSpace(name)
	switch name {
	case "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "CI", "COMSPEC",
		"HOME", "LD_PRELOAD", "NODE_EXTRA_CA_CERTS", "NODE_OPTIONS", "PATH", "PATHEXT",
		"PYTHONHOME", "PYTHONPATH", "REQUESTS_CA_BUNDLE", "SSL_CERT_DIR", "SSL_CERT_FILE",
		"SystemRoot", "TEMP", "TMP", "TMPDIR", "WINDIR":
		return true
	}
	for _, p := range []string{"ACTIONS_", "AWS_", "AZURE_", "DYLD_", "GCLOUD_", "GITHUB_", "GOOGLE_",
		"LD_", "NODE_", "NPM_", "PIP_", "PYTHON_", "RUNNER_", "SSH_", "UV_", "XDG_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func envList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	return list
}

// tail keeps the last 4000 bytes written, for a failure's message.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4000 {
		t.b = t.b[len(t.b)-4000:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func withStderr(err error, t *tail) error {
	if s := strings.TrimSpace(t.String()); s != "" {
		return fmt.Errorf("%w\nstderr:\n%s", err, s)
	}
	return err
}

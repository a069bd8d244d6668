// Package mcp connects Rebound to the MCP servers an editor names in
// session/new, session/load and session/resume, and offers their tools to
// the model.
//
// The package knows nothing about ACP: the agent converts ACP's server
// descriptions to Specs, routes the model's calls of names in Set.Tools to
// Set.Call and decides about permissions.
//
// A server is an untrusted peer, and a broken or malicious one must cost
// Rebound neither a session nor the process. So everything a server sends is
// bounded (tools, descriptions, schemas, results, message sizes), every wait
// has a timeout, a stdio server runs under internal/proc, so that Close (or
// its exit) kills everything it started, its environment lacks Rebound's
// credentials, its stderr never reaches Rebound's stdout (the ACP connection), and
// a server that dies turns into clear errors for the calls of its tools
// instead of hangs.
package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/llm"
)

// Transports of a Spec.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // MCP's streamable HTTP
	TransportSSE   = "sse"  // MCP's older HTTP+SSE transport
)

// Spec describes one MCP server, as an editor passes it.
type Spec struct {
	Name      string
	Transport string // TransportStdio (also ""), TransportHTTP or TransportSSE

	// Stdio: the command (an absolute path, or a name looked up in PATH),
	// its arguments, and variables added to Rebound's environment.
	Command string
	Args    []string
	Env     []KV

	// HTTP and SSE: the endpoint, and headers sent with every request to
	// its origin (typically Authorization).
	URL     string
	Headers []KV
}

// KV is a name and a value: an environment variable or an HTTP header.
type KV struct{ Name, Value string }

// Defaults of Options.
const (
	DefaultStartTimeout = 10 * time.Second
	DefaultCallTimeout  = 5 * time.Minute
	DefaultStopGrace    = 2 * time.Second
)

// Options configure Start. The zero value is usable.
type Options struct {
	// StartTimeout bounds connecting to one server and listing its tools.
	// Zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// CallTimeout bounds one tool call, so that a server that never answers
	// cannot hold a turn until the user cancels it. Zero means
	// DefaultCallTimeout; negative means no bound.
	CallTimeout time.Duration
	// StopGrace is how long Close lets a stdio server exit after its stdin
	// is closed, and again after SIGTERM, before it kills the process
	// group. Zero means DefaultStopGrace.
	StopGrace time.Duration
	// Dir is the working directory of stdio servers: the session's cwd.
	Dir string
	// HTTP, when set, makes the transport under one HTTP server's requests
	// (the proxy and certificate authorities Rebound is configured with);
	// nil: a clone of http.DefaultTransport.
	HTTP NewHTTP
	// Secrets are left out of the environment stdio servers inherit from
	// Rebound; a Spec's own Env still applies.
	Secrets proc.Secrets
	// Logger receives the servers' stderr (debug) and what was dropped or
	// went wrong (warn).
	Logger zerolog.Logger
	// OnExit is called once for a server that stops after it started: its
	// process exited or its connection broke. err says why, naming the
	// server, and is the error later calls of its tools return. It is not
	// called for servers stopped by Close. It runs on a goroutine of its own
	// server, possibly before Start has returned, and may call the Set's
	// methods, Close included.
	OnExit func(server string, err error)
	// Connect, when set, gives every server's transport instead of its
	// spec's: tests serve servers in process, since a subprocess would
	// stall a testing/synctest bubble's clock. An error is the server's
	// start failure.
	Connect func(ctx context.Context, sp Spec) (Transport, error)
}

// Transport is how a session talks to a server (the go-sdk's).
type Transport = sdk.Transport

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	return o
}

// Failure is a server that could not be started. Err says why in words a
// person can act on, and names the server.
type Failure struct {
	Server string
	Err    error
}

func (f Failure) Error() string { return f.Err.Error() }

// Result is the outcome of a call the server answered.
type Result struct {
	// Text is the content for the model: text parts joined by newlines,
	// other parts described in brackets ("[image: image/png, 1234 bytes]"),
	// at most MaxResult bytes.
	Text string
	// IsError is the server's verdict: the tool ran and failed. Also set,
	// without any call, when the model's arguments are not a JSON object.
	IsError bool
}

// Set is the running servers of one session and the tools they offer.
// Its methods may be called from any goroutine. A nil *Set has no tools.
type Set struct {
	servers     []*server
	tools       []llm.ToolDef
	routes      map[string]route
	callTimeout time.Duration
	grace       time.Duration

	closeOnce sync.Once
	closeErr  error
}

type route struct {
	srv  *server
	tool string // the server's own name of the tool
}

// legacyProtocol is the protocol version Rebound asks stdio and SSE servers
// for. The SDK's default, 2026-07-28, first probes with server/discover and
// falls back to initialize on an error; but a legacy stdio server may
// ignore the probe (Connect then waits for the start timeout) or exit on it
// (go-sdk issue #1177), and today's servers are legacy. A server still
// negotiates down from here.
const legacyProtocol = "2025-11-25"

// Start connects to every server concurrently, lists its tools, and returns
// the servers that worked; each one that did not is a Failure. The servers
// run until Close, whatever happens to ctx after Start returns; ctx cancels
// the start itself.
func Start(ctx context.Context, specs []Spec, opts Options) (*Set, []Failure) {
	opts = opts.withDefaults()
	var failures []Failure
	var todo []Spec
	seen := make(map[string]bool)
	for i, sp := range specs {
		err := sp.check(i)
		switch {
		case err != nil:
		case seen[sp.Name]:
			err = fmt.Errorf("MCP server %q is listed more than once; only the first one is started", sp.Name)
		case len(todo) == MaxServers:
			err = fmt.Errorf("MCP server %q was not started: at most %d MCP servers are supported", sp.Name, MaxServers)
		}
		if err != nil {
			failures = append(failures, Failure{Server: sp.Name, Err: err})
			continue
		}
		seen[sp.Name] = true
		todo = append(todo, sp)
	}

	type started struct {
		srv   *server
		tools []*sdk.Tool
		err   error
	}
	results := make([]started, len(todo))
	var wg sync.WaitGroup
	for i, sp := range todo {
		wg.Go(func() {
			srv, tools, err := startServer(ctx, sp, opts)
			results[i] = started{srv, tools, err}
		})
	}
	wg.Wait()

	// Names are handed out in the order of specs and tools, not of
	// completion, so that they are the same in every session.
	s := &Set{routes: make(map[string]route), callTimeout: opts.CallTimeout, grace: opts.StopGrace}
	var names namer
	for i, r := range results {
		if r.err != nil {
			failures = append(failures, Failure{Server: todo[i].Name, Err: r.err})
			continue
		}
		s.servers = append(s.servers, r.srv)
		for _, t := range r.tools {
			def, err := toolDef("", t)
			if err != nil {
				r.srv.log.Warn().Str("tool", printable(t.Name, 100)).Msgf("MCP tool skipped: %v", err)
				continue
			}
			def.Name = names.name(r.srv.name, t.Name)
			s.tools = append(s.tools, def)
			s.routes[def.Name] = route{srv: r.srv, tool: t.Name}
		}
	}
	return s, failures
}

// check reports what is missing or malformed in the i'th spec.
func (sp Spec) check(i int) error {
	if sp.Name == "" {
		return fmt.Errorf("MCP server #%d has no name", i+1)
	}
	switch sp.transport() {
	case TransportStdio:
		return sp.checkStdio()
	case TransportHTTP, TransportSSE:
		return sp.checkHTTP()
	}
	return fmt.Errorf("MCP server %q has unknown transport %q (want %s, %s or %s)",
		sp.Name, sp.Transport, TransportStdio, TransportHTTP, TransportSSE)
}

// checkStdio checks what starting a server as a process needs: a command,
// and an environment that can be passed on.
func (sp Spec) checkStdio() error {
	if sp.Command == "" {
		return fmt.Errorf("MCP server %q has no command", sp.Name)
	}
	for _, kv := range sp.Env {
		if kv.Name == "" || strings.ContainsAny(kv.Name, "=\x00") || strings.ContainsRune(kv.Value, 0) {
			return fmt.Errorf("MCP server %q has an invalid environment variable %q", sp.Name, kv.Name)
		}
	}
	return nil
}

// checkHTTP checks what reaching a server over HTTP needs: an absolute
// http or https URL, and headers that can be sent as they are.
func (sp Spec) checkHTTP() error {
	if sp.URL == "" {
		return fmt.Errorf("MCP server %q has no url", sp.Name)
	}
	u, err := url.Parse(sp.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("MCP server %q has an invalid url: it must be an absolute http or https URL", sp.Name)
	}
	for _, h := range sp.Headers {
		if !validHeaderName(h.Name) || strings.ContainsAny(h.Value, "\r\n\x00") {
			return fmt.Errorf("MCP server %q has an invalid header %q", sp.Name, h.Name)
		}
	}
	return nil
}

func (sp Spec) transport() string {
	if sp.Transport == "" {
		return TransportStdio
	}
	return sp.Transport
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 5.6.2).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Tools returns the tools to offer the model, in a stable order. Tools of a
// server that has stopped stay listed, so the model's view does not change
// under it; calling them returns the server's stop error.
func (s *Set) Tools() []llm.ToolDef {
	if s == nil {
		return nil
	}
	return append([]llm.ToolDef(nil), s.tools...)
}

// Lookup maps a tool name from Tools back to its server and the server's
// own name of the tool, for routing a call and titling it
// ("github: create_issue").
func (s *Set) Lookup(name string) (server, tool string, ok bool) {
	if s == nil {
		return "", "", false
	}
	r, ok := s.routes[name]
	if !ok {
		return "", "", false
	}
	return r.srv.name, r.tool, true
}

// Call calls the tool the model named, with the model's arguments (JSON
// text). Arguments that are not a JSON object give a Result with IsError
// telling the model what to fix, and no call is made. A server that answers
// with a JSON-RPC error, does not answer within the call timeout, has
// stopped or is closed gives an error naming the server; ctx's cancellation
// gives an error wrapping ctx's cause.
func (s *Set) Call(ctx context.Context, name, arguments string) (Result, error) {
	if s == nil {
		return Result{}, fmt.Errorf("there is no MCP tool called %q", name)
	}
	r, ok := s.routes[name]
	if !ok {
		return Result{}, fmt.Errorf("there is no MCP tool called %q", name)
	}
	args, problem := checkArguments(arguments)
	if problem != "" {
		return Result{Text: problem, IsError: true}, nil
	}
	return r.srv.call(ctx, r.tool, args, s.callTimeout)
}

// Close stops every server and waits until they have stopped: running calls
// return at once, stdio servers get StopGrace to exit after their stdin is
// closed and again after SIGTERM, then their process groups are killed.
// Close is safe to call more than once and on a nil Set; the error says
// which servers could not be stopped.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		errs := make([]error, len(s.servers))
		var wg sync.WaitGroup
		for i, srv := range s.servers {
			wg.Go(func() { errs[i] = srv.close(s.grace) })
		}
		wg.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

var (
	errStartTimeout = errors.New("start timeout")
	errCallTimeout  = errors.New("call timeout")
	errClosed       = errors.New("closed")
)

// exitWait is how long a broken connection waits for the process to exit,
// to report its exit status rather than "EOF".
const exitWait = time.Second

// server is one running server.
type server struct {
	name    string
	log     zerolog.Logger
	secrets redactor // applied to every error and log line about the server
	sess    *sdk.ClientSession
	proc    *process       // stdio only
	http    *httpTransport // http and sse only
	// stopNet aborts every HTTP request of the server (http and sse only).
	stopNet context.CancelFunc
	// calls is cancelled by Close, which makes running calls return.
	calls       context.Context
	cancelCalls context.CancelFunc
	done        chan struct{} // closed by watch once it has recorded a stop

	mu      sync.Mutex
	stopped error // why it stopped by itself; nil while it runs
	closing bool
}

// startServer starts one server and lists its tools; the error is a
// complete sentence for a person.
func startServer(ctx context.Context, sp Spec, opts Options) (*server, []*sdk.Tool, error) {
	srv := &server{
		name:    sp.Name,
		log:     opts.Logger.With().Str("mcpServer", sp.Name).Logger(),
		secrets: newRedactor(sp),
		done:    make(chan struct{}),
	}
	life := context.WithoutCancel(ctx) // the server outlives Start's ctx
	srv.calls, srv.cancelCalls = context.WithCancel(life)
	startCtx, cancel := context.WithTimeoutCause(ctx, opts.StartTimeout, errStartTimeout)
	defer cancel()

	var transport sdk.Transport
	sessOpts := &sdk.ClientSessionOptions{}
	// abort ends the server at once when the start times out: the SDK
	// honours ctx, but a server must not be able to hold a write or a
	// close past the timeout.
	var abort func()
	switch {
	case opts.Connect != nil:
		t, err := opts.Connect(startCtx, sp)
		if err != nil {
			srv.cancelCalls()
			return nil, nil, fmt.Errorf("MCP server %q could not be started: %w", sp.Name, err)
		}
		transport, abort = t, func() {}
		srv.stopNet = func() {}
	case sp.transport() == TransportStdio:
		p, err := startProcess(sp, opts.Dir, opts.Secrets, srv.log)
		if err != nil {
			srv.cancelCalls()
			return nil, nil, fmt.Errorf("MCP server %q could not be started: %w", sp.Name, err)
		}
		srv.proc = p
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin, MaxLineLength: maxFrame}
		sessOpts.ProtocolVersion = legacyProtocol
		abort = p.kill
	default:
		u, _ := url.Parse(sp.URL) // checked by Spec.check
		var netCtx context.Context
		netCtx, srv.stopNet = context.WithCancel(life)
		srv.http = newHTTPTransport(netCtx, u, sp.Headers, opts.HTTP)
		client := &http.Client{Transport: srv.http}
		if sp.transport() == TransportSSE {
			transport = detachedConnect{
				Transport: &sdk.SSEClientTransport{Endpoint: sp.URL, HTTPClient: client, MaxEventSize: maxFrame},
				ctx:       netCtx,
			}
			sessOpts.ProtocolVersion = legacyProtocol
		} else {
			transport = &sdk.StreamableClientTransport{
				Endpoint:   sp.URL,
				HTTPClient: client,
				// Rebound handles no server-initiated messages, so the
				// long-lived GET stream would only cost a connection.
				DisableStandaloneSSE: true,
				MaxEventSize:         maxFrame,
			}
		}
		abort = srv.stopNet
	}
	stopAbort := context.AfterFunc(startCtx, abort)

	client := sdk.NewClient(&sdk.Implementation{Name: "rebound", Version: version()}, &sdk.ClientOptions{
		Logger: newSlogLogger(srv.log, srv.secrets),
		// No roots: a server that asks for them (the reference filesystem
		// server does) would replace its configured directories with none.
		Capabilities: &sdk.ClientCapabilities{},
	})
	phase := "initialize"
	sess, err := client.Connect(startCtx, transport, sessOpts)
	var tools []*sdk.Tool
	if err == nil {
		srv.sess = sess
		phase = "tools/list"
		tools, err = listTools(startCtx, sess, srv.log)
	}
	stopAbort()
	if err != nil {
		return nil, nil, srv.failStart(startCtx, phase, err, opts.StartTimeout)
	}
	srv.log.Debug().Int("tools", len(tools)).Str("transport", sp.transport()).Msg("MCP server started")
	go srv.watch(opts.OnExit)
	return srv, tools, nil
}

// failStart cleans up after a failed start and says why it failed.
func (srv *server) failStart(startCtx context.Context, phase string, err error, timeout time.Duration) error {
	msg := startFailure(startCtx, phase, err, timeout)
	srv.cancelCalls()
	if p := srv.proc; p != nil {
		msg = p.stopFailedStart(msg, phase, err)
	}
	if srv.http != nil {
		srv.stopNet()
		if serr := srv.http.statusError(); msg == "" && serr != nil {
			msg = "could not be started: " + serr.Error()
		}
	}
	if msg == "" {
		msg = "could not be started: " + errorText(err)
	}
	if srv.sess != nil {
		srv.closeBounded(killWait)
	}
	srv.log.Debug().Str("error", srv.secrets.redact(err.Error())).Msg("MCP server start failed")
	return fmt.Errorf("MCP server %q %s", srv.name, srv.secrets.redact(msg))
}

// startFailure says why a start failed where the start's context or the
// server's answer tells: a timeout, a cancel, an error answered to phase;
// "" when only err can tell.
func startFailure(startCtx context.Context, phase string, err error, timeout time.Duration) string {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.Is(context.Cause(startCtx), errStartTimeout):
		return fmt.Sprintf("did not answer %s within %v", phase, timeout)
	case startCtx.Err() != nil:
		return "was not started: the start was cancelled"
	case errors.As(err, &rpcErr):
		return fmt.Sprintf("answered %s with an error: %s", phase, errorText(rpcErr))
	}
	return ""
}

// stopFailedStart ends the process of a server whose start failed, and
// returns msg (why it failed, "" when only err can tell) with what its
// exit adds: that it exited by itself before it answered phase, or the
// last line it wrote to stderr.
func (p *process) stopFailedStart(msg, phase string, err error) string {
	// A broken connection usually means the server exited: wait a
	// moment for its exit status before killing what is left.
	exitedItself := msg == "" && p.waitExit(exitWait)
	p.kill()
	_ = p.stdin.Close()
	_ = p.stdout.Close()
	if !p.waitExit(killWait) {
		return msg
	}
	status, line := p.exitReason()
	switch {
	case exitedItself:
		msg = fmt.Sprintf("exited before it answered %s (%s)", phase, status)
		if line != "" {
			msg += ": " + line
		}
	case line != "":
		msg = cmp.Or(msg, "could not be started: "+errorText(err)) + " (stderr: " + line + ")"
	}
	return msg
}

// closeBounded closes a session without letting a stuck peer hold the
// caller longer than d: the SDK waits for in-flight requests, and a
// streamable HTTP session sends a DELETE.
func (srv *server) closeBounded(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.sess.Close(); err != nil {
			srv.log.Debug().Str("error", srv.secrets.redact(err.Error())).Msg("MCP session close")
		}
	}()
	return waitFor(done, d)
}

// waitFor reports whether ch was closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// maxPages bounds tools/list pagination: a server could return a next
// cursor forever.
const maxPages = 64

// listTools lists up to MaxToolsPerServer tools.
func listTools(ctx context.Context, sess *sdk.ClientSession, log zerolog.Logger) ([]*sdk.Tool, error) {
	if res := sess.InitializeResult(); res == nil || res.Capabilities == nil || res.Capabilities.Tools == nil {
		log.Debug().Msg("MCP server offers no tools")
		return nil, nil
	}
	var tools []*sdk.Tool
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			log.Warn().Msgf("MCP server lists its tools in more than %d pages; the rest are dropped", maxPages)
			break
		}
		res, err := sess.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if t != nil {
				tools = append(tools, t)
			}
		}
		if len(tools) > MaxToolsPerServer {
			log.Warn().Msgf("MCP server offers more than %d tools; only the first %d are used", MaxToolsPerServer, MaxToolsPerServer)
			tools = tools[:MaxToolsPerServer]
			break
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			break
		}
		cursor = res.NextCursor
	}
	return tools, nil
}

// watch waits for the server to stop by itself and records why: the process
// exited, or the connection broke (the process is then killed, since nobody
// can talk to it any more).
func (srv *server) watch(onExit func(string, error)) {
	broke := make(chan error, 1)
	go func() { broke <- srv.sess.Wait() }()
	var exited <-chan struct{} // nil for http: never ready
	if srv.proc != nil {
		exited = srv.proc.exited
	}
	var reason string
	select {
	case err := <-broke:
		if srv.isClosing() {
			break
		}
		if p := srv.proc; p != nil && p.waitExit(exitWait) {
			reason = p.exitDescription()
			break
		}
		reason = "its connection closed"
		if err != nil {
			reason = "its connection broke: " + errorText(err)
		}
		if srv.proc != nil {
			srv.proc.kill()
		}
	case <-exited:
		if srv.isClosing() {
			break
		}
		reason = srv.proc.exitDescription()
		srv.proc.kill() // children it left behind
	}

	srv.mu.Lock()
	closing := srv.closing
	if !closing {
		srv.stopped = fmt.Errorf("MCP server %q has stopped: %s", srv.name, srv.secrets.redact(reason))
	}
	stopped := srv.stopped
	srv.mu.Unlock()
	close(srv.done)
	if closing {
		return
	}
	srv.log.Warn().Err(stopped).Msg("MCP server stopped")
	if onExit != nil {
		onExit(srv.name, stopped)
	}
}

// exitDescription is "exit status 3: <last stderr line>".
func (p *process) exitDescription() string {
	status, line := p.exitReason()
	if line != "" {
		return status + ": " + line
	}
	return status
}

func (srv *server) isClosing() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.closing
}

// unusable returns why calls cannot be made, or nil.
func (srv *server) unusable() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closing {
		return fmt.Errorf("MCP server %q is closed", srv.name)
	}
	return srv.stopped
}

func (srv *server) call(ctx context.Context, tool string, args json.RawMessage, timeout time.Duration) (Result, error) {
	if err := srv.unusable(); err != nil {
		return Result{}, err
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(srv.calls, func() { cancel(errClosed) })
	defer stop()
	if timeout > 0 {
		var cancelTimeout context.CancelFunc
		callCtx, cancelTimeout = context.WithTimeoutCause(callCtx, timeout, errCallTimeout)
		defer cancelTimeout()
	}

	// The SDK writes the request before it looks at ctx, and a stdio server
	// that stops reading can block that write; so the call runs apart and
	// this waits for it or for ctx. Close unblocks the write.
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := srv.sess.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
		answers <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-answers:
	case <-callCtx.Done():
		a.err = callCtx.Err()
	}
	if a.err == nil && a.res == nil {
		a.err = errors.New("the answer has no result")
	}
	if a.err != nil {
		return Result{}, srv.callError(ctx, callCtx, tool, a.err, timeout)
	}
	return Result{Text: resultText(a.res), IsError: a.res.IsError}, nil
}

// callError says why a call failed, in the terms of what happened to the
// server rather than of the SDK.
func (srv *server) callError(ctx, callCtx context.Context, tool string, err error, timeout time.Duration) error {
	if ctx.Err() != nil {
		return fmt.Errorf("call to MCP tool %s: %s stopped: %w", srv.name, tool, context.Cause(ctx))
	}
	switch cause := context.Cause(callCtx); {
	case errors.Is(cause, errClosed):
		return fmt.Errorf("MCP server %q was closed during the call to %s", srv.name, tool)
	case errors.Is(cause, errCallTimeout):
		return fmt.Errorf("MCP server %q did not answer the call to %s within %v", srv.name, tool, timeout)
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return fmt.Errorf("MCP server %q answered the call to %s with an error: %s", srv.name, tool, srv.secrets.redact(errorText(rpcErr)))
	}
	// Anything else is most likely the server dying under the call; its
	// watcher is about to say how.
	waitFor(srv.done, exitWait+stderrDrain)
	if stopped := srv.unusable(); stopped != nil {
		return stopped
	}
	return fmt.Errorf("MCP server %q failed the call to %s: %s", srv.name, tool, srv.secrets.redact(errorText(err)))
}

// close stops the server; see Set.Close.
func (srv *server) close(grace time.Duration) error {
	srv.mu.Lock()
	srv.closing = true
	srv.mu.Unlock()
	srv.cancelCalls()

	var err error
	if p := srv.proc; p != nil {
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_ = srv.sess.Close() // also closes our pipe ends; errors are expected
		}()
		if err = p.stop(grace); err != nil {
			err = fmt.Errorf("MCP server %q: %w", srv.name, err)
		}
		if !waitFor(closed, killWait) { // the process is gone, so are the pipes: prompt
			srv.log.Warn().Msg("MCP session did not close in time; leaving it behind")
		}
	} else {
		srv.closeBounded(grace) // a streamable session sends a DELETE
		srv.stopNet()
	}
	waitFor(srv.done, killWait)
	return err
}

// version is Rebound's module version, sent to servers in initialize.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

package acp

import (
	"context"
	"errors"
	"fmt"
	"github.com/rebound-agent/rebound/internal/text"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

// AgentName is agentInfo.name in the initialize response.
const AgentName = "rebound"

// Config configures a Server. The zero value works: version "dev", no
// logging, the production line limit.
type Config struct {
	// Version is agentInfo.version.
	Version string
	// Logger is where the server logs (stderr in production; never the
	// protocol stream). The zero value discards.
	Logger zerolog.Logger
	// CapabilitiesMeta is sent as agentCapabilities._meta, for advertising
	// Rebound's extensions.
	CapabilitiesMeta Meta
	// McpCapabilities are the MCP transports beyond stdio the agent
	// connects to; nil advertises none.
	McpCapabilities *McpCapabilities
	// MaxLineBytes caps an input line; 0 means MaxLineBytes.
	MaxLineBytes int
}

// Server speaks ACP over one stdio connection and dispatches typed requests
// to an Agent. It maps errors to wire errors once, on the way out.
//
// Concurrency is chosen per method: initialize and session/cancel run
// inline on the read goroutine, so they keep wire order and a cancel is
// never queued behind the turn it cancels; every method that reaches the
// Agent (authenticate, session/new, load, prompt, list, resume, close and
// delete) runs in a goroutine of its own, because the agent may be slow
// (creating or loading a session log reads it from disk, session/close
// waits for the turn it cancels) and load and prompt call back into the
// client, whose answers a handler blocking the read loop would never see.
// So the read goroutine never waits for the agent: a session/cancel is
// handled as soon as it is read, whatever the agent is doing.
//
// Requests before initialize are served anyway, with empty client
// capabilities: Zed always initializes first, rejecting others would only
// make hand-driven and test clients fail for no protection gained.
type Server struct {
	agent Agent
	cfg   Config
	log   zerolog.Logger

	served atomic.Bool
	out    *LineStream // the connection's stream: session updates are written to it directly
	// base parents every turn and load context; Serve sets it before the
	// read goroutine starts and cancels it with ErrShutdown on the way out.
	base context.Context
	stop context.CancelCauseFunc

	mu   sync.Mutex
	caps ClientCapabilities
	// initialized is set by the first initialize: what a session may do
	// (write through the editor, run in its terminal) depends on the
	// capabilities it declares, so nothing else is served before it.
	initialized bool
	prompts     map[string]*runningPrompt // the running prompt per session id
	// closing counts the session/close and session/delete requests being
	// served per session id: prompts for it are refused meanwhile.
	closing  map[string]int
	stopping bool           // set once; no work starts after it
	work     sync.WaitGroup // goroutines calling the agent; Add only under mu while !stopping
	readErr  error          // why the input failed, if not a plain EOF

	// shutdown runs once: the first caller sets shutdownRun and closes
	// stopped when done; later ones wait for that (a channel, not a
	// sync.Once: a goroutine waiting on one is durably blocked, so
	// testing/synctest's clock can run).
	shutdownRun bool
	stopped     chan struct{}

	nextCallID atomic.Uint64 // the last id of a request sent to the client
}

var _ jsonrpc2.Handler = (*Server)(nil)

// NewServer returns a server for one connection.
func NewServer(agent Agent, cfg Config) *Server {
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	return &Server{
		agent:   agent,
		cfg:     cfg,
		log:     cfg.Logger.With().Str("component", "acp").Logger(),
		prompts: map[string]*runningPrompt{},
		closing: map[string]int{},
		stopped: make(chan struct{}),
	}
}

// Serve runs the connection until the input ends or ctx is done. Either way
// it then cancels running turns with ErrShutdown, waits for them to reply
// (cancelled) and for the output to be written, and returns: nil at the end
// of input, ctx.Err() when ctx was done, the read error if the input broke.
// The wait is bounded (stopTimeout, 2 s, then closeGrace, 1 s), so Serve
// returns even if nobody reads out: what is still unwritten then is dropped
// and logged. Nothing but protocol messages is written to out. When ctx
// ends Serve closes in if it is an io.Closer, so the blocked read returns;
// otherwise that read is left to end on its own. A Server serves one
// connection.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("acp: Serve called twice; a Server serves one connection")
	}
	s.base, s.stop = context.WithCancelCause(context.WithoutCancel(ctx))
	s.out = NewLineStream(StdioConn(in, out), StreamConfig{MaxLineBytes: s.cfg.MaxLineBytes, Logger: s.log})
	// When the input ends, the turns are drained while the connection can
	// still carry their replies: jsonrpc2.Conn closes itself as soon as
	// ReadObject fails.
	s.out.onInputEnd = s.inputEnded
	// The connection must outlive ctx: turns are answered before it closes.
	conn := jsonrpc2.NewConn(context.WithoutCancel(ctx), s.out, s, jsonrpc2.SetLogger(RPCLogger{L: s.log}))
	select {
	case <-conn.DisconnectNotify():
		s.shutdown() // done already by inputEnded; kept for any other close
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.readErr
	case <-ctx.Done():
		s.log.Info().Err(context.Cause(ctx)).Msg("acp: stopping")
		s.shutdown()
		conn.Close()
		return ctx.Err()
	}
}

func (s *Server) inputEnded(err error) {
	s.mu.Lock()
	if !s.stopping && !errors.Is(err, io.EOF) {
		s.readErr = fmt.Errorf("acp: connection: %w", err)
	}
	s.mu.Unlock()
	s.log.Debug().Err(err).Msg("acp: input ended")
	s.shutdown()
}

// stopTimeout bounds how long a stopping Server waits for its running work
// to reply (turns are cancelled first, so they answer at once unless the
// output is stuck) and for the output to be written, before it closes the
// stream anyway; closeGrace more is then allowed for the work to end.
const stopTimeout = 2 * time.Second

// shutdown stops new work, cancels what runs, and waits, at most
// stopTimeout, for it to reply and for the output to be written. Then it
// closes the stream: output nobody has read by then is dropped, and work
// blocked writing it returns. So shutdown is bounded even when nobody
// reads the output. It runs once; a concurrent call waits for it.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.stopping = true
	first := !s.shutdownRun
	s.shutdownRun = true
	s.mu.Unlock()
	if !first {
		<-s.stopped
		return
	}
	defer close(s.stopped)
	s.stop(ErrShutdown)

	deadline := time.Now().Add(stopTimeout)
	done := make(chan struct{})
	go func() {
		s.work.Wait()
		close(done)
	}()
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	finished := true
	select {
	case <-done:
	case <-t.C:
		finished = false
		s.log.Warn().Dur("after", stopTimeout).Msg("acp: requests still running at shutdown; closing the output")
	}
	if err := s.out.closeWithin(time.Until(deadline)); err != nil {
		s.log.Warn().Err(err).Msg("acp: output lost at shutdown")
	}
	if !finished {
		t.Reset(closeGrace)
		select {
		case <-done:
		case <-t.C:
			s.log.Warn().Msg("acp: the agent did not stop; leaving its requests unanswered")
		}
	}
}

var errShuttingDown = &RequestError{Code: CodeRequestCancelled, Message: "Rebound is shutting down"}

func (s *Server) startWork() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.work.Add(1)
	return true
}

// clip returns s, or its first n bytes (at a rune boundary) and "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Prefix(s, n) + "…"
}

// quote quotes a string the client sent for an error message, clipped to
// maxQuoted bytes: an error never echoes much more than that of its input.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(clip(s, maxQuoted)) + fmt.Sprintf(" (%d bytes)", len(s))
}

const maxQuoted = 64

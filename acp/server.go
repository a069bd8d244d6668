package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"github.com/rebound-agent/rebound/internal/text"

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
//
// Its parts, each a job of its own: hello (handshake.go) is what initialize
// settles, work (inflight.go) the requests running in the agent and the
// prompt of each session, end (shutdown.go) the bounded stop, answers
// (reply.go) the replies and their errors, and out (stream.go) the
// connection's lines.
type Server struct {
	agent Agent
	cfg   Config
	log   zerolog.Logger

	served atomic.Bool
	out    *LineStream // the connection's stream: session updates are written to it directly
	// base parents every turn and load context; Serve sets it before the
	// read goroutine starts, and end cancels it with ErrShutdown.
	base context.Context

	hello   *handshake
	work    *inflight
	end     *stopper // set by Serve
	answers replier  // set by Serve

	nextCallID atomic.Uint64 // the last id of a request sent to the client
}

var _ jsonrpc2.Handler = (*Server)(nil)

// NewServer returns a server for one connection.
func NewServer(agent Agent, cfg Config) *Server {
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	log := cfg.Logger.With().Str("component", "acp").Logger()
	return &Server{
		agent: agent,
		cfg:   cfg,
		log:   log,
		hello: &handshake{agent: agent, cfg: cfg, log: log},
		work:  newInflight(),
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
	base, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	s.base = base
	s.out = NewLineStream(StdioConn(in, out), StreamConfig{MaxLineBytes: s.cfg.MaxLineBytes, Logger: s.log})
	s.end = newStopper(s.work, cancel, s.out.closeWithin, s.log)
	s.answers = replier{log: s.log, rich: func() bool { return s.hello.capabilities().RichErrors() }, idText: s.out.idText}
	// When the input ends, the turns are drained while the connection can
	// still carry their replies: jsonrpc2.Conn closes itself as soon as
	// ReadObject fails.
	s.out.onInputEnd = s.end.inputEnded
	// The connection must outlive ctx: turns are answered before it closes.
	conn := jsonrpc2.NewConn(context.WithoutCancel(ctx), s.out, s, jsonrpc2.SetLogger(RPCLogger{L: s.log}))
	select {
	case <-conn.DisconnectNotify():
		s.end.stop() // done already by inputEnded; kept for any other close
		return s.end.err()
	case <-ctx.Done():
		s.log.Info().Err(context.Cause(ctx)).Msg("acp: stopping")
		s.end.stop()
		conn.Close()
		return ctx.Err()
	}
}

var errShuttingDown = &RequestError{Code: CodeRequestCancelled, Message: "Rebound is shutting down"}

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

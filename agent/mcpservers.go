package agent

import (
	"context"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/internal/proc"
)

// mcpServers are the MCP servers the editor gave a session. They start in
// the background when the session is made, loaded or resumed, so the
// answer does not wait for them; a turn waits until they are ready (each
// has mcp's start timeout). A server that fails to start, or dies later,
// is reported once to the editor and the session goes on without it.
type mcpServers struct {
	ready  chan struct{} // closed once set and the start failures are known
	set    *mcp.Set
	cancel context.CancelFunc

	mu      sync.Mutex
	unsaid  []mcp.Failure // failures not yet told to the editor
	missing []string      // what the model is told about servers that are not there
	closed  bool
}

// mcpStarter starts a session's MCP servers: what it needs of the
// configuration (Config.MCPConnect, MCPHTTP, Secrets).
type mcpStarter struct {
	connect func(context.Context, mcp.Spec) (mcp.Transport, error)
	http    mcp.NewHTTP
	secrets func() proc.Secrets
	log     *zerolog.Logger
}

// start starts the servers of servers in the background; nil when there
// are none.
func (st mcpStarter) start(sessionID, cwd string, servers []acp.McpServer) *mcpServers {
	if len(servers) == 0 {
		return nil
	}
	specs := make([]mcp.Spec, len(servers))
	for i, s := range servers {
		specs[i] = mcp.Spec{Name: s.Name, Transport: s.Transport(), Command: s.Command, Args: s.Args, URL: s.URL}
		for _, e := range s.Env {
			specs[i].Env = append(specs[i].Env, mcp.KV{Name: e.Name, Value: e.Value})
		}
		for _, h := range s.Headers {
			specs[i].Headers = append(specs[i].Headers, mcp.KV{Name: h.Name, Value: h.Value})
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &mcpServers{ready: make(chan struct{}), cancel: cancel}
	log := st.log.With().Str("session", sessionID).Logger()
	go func() {
		set, failures := mcp.Start(ctx, specs, mcp.Options{
			Dir:     cwd,
			Secrets: st.secrets(),
			Logger:  log,
			Connect: st.connect,
			HTTP:    st.http,
			OnExit: func(server string, err error) {
				log.Warn().Err(err).Str("mcpServer", server).Msg("MCP server stopped")
				m.fail(mcp.Failure{Server: server, Err: err})
			},
		})
		for _, f := range failures {
			log.Warn().Err(f.Err).Str("mcpServer", f.Server).Msg("MCP server not available")
		}
		m.mu.Lock()
		m.set = set
		m.unsaid = append(failures, m.unsaid...)
		for _, f := range failures {
			m.missing = append(m.missing, f.Server)
		}
		m.mu.Unlock()
		close(m.ready)
	}()
	return m
}

// restart gives a session being loaded or resumed the servers the
// editor named now, stopping the ones it had first (the same servers may
// be named again). Called under turnMu, which every other user of s.mcp
// but Close holds. whileOpen is the store's (sessionHolder.whileOpen): it
// sets s.mcp unless the agent has closed.
func (st mcpStarter) restart(s *sessionState, servers []acp.McpServer, whileOpen func(func()) bool) {
	s.mcp.close()
	m := st.start(s.id, s.dirs.cwd, servers)
	// Under the store's lock too, as Close reads s.mcp to stop every
	// session's servers.
	if !whileOpen(func() { s.mcp = m }) {
		m.close()
	}
}

func (m *mcpServers) fail(f mcp.Failure) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unsaid = append(m.unsaid, f)
	m.missing = append(m.missing, f.Server)
}

// wait returns the running servers once they are ready, nil if the turn
// is cancelled first or there are none.
func (m *mcpServers) wait(ctx context.Context) *mcp.Set {
	if m == nil {
		return nil
	}
	select {
	case <-m.ready:
	case <-ctx.Done():
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.set
}

// starting reports whether the servers are still starting.
func (m *mcpServers) starting() bool {
	if m == nil {
		return false
	}
	select {
	case <-m.ready:
		return false
	default:
		return true
	}
}

// takeFailures returns the failures not yet told, and forgets them.
func (m *mcpServers) takeFailures() []mcp.Failure {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.unsaid
	m.unsaid = nil
	return f
}

// close stops the servers, and returns once they have stopped: a start
// still running is cancelled first. Safe on nil and more than once.
func (m *mcpServers) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	<-m.ready
	m.mu.Lock()
	set := m.set
	m.mu.Unlock()
	set.Close() // what it could not stop cleanly, mcp logs
}

// mcpNote is what the system prompt says about the session's MCP servers
// that are not there, so the model can tell the user why a tool is
// missing; "" when all are.
func (m *mcpServers) note() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.missing) == 0 {
		return ""
	}
	return "These MCP servers the user configured are not available (they failed to start or stopped), so their tools cannot be used: " + strings.Join(m.missing, ", ") + "."
}

func mcpScope(name string) string { return "mcp:" + name }

package acp

import (
	"net/url"
	"slices"
)

// McpServer is one MCP server the editor asks the session to use. Type is
// "" for stdio (the schema's default, which has no type member), "http" or
// "sse".
type McpServer struct {
	Type    string        `json:"type,omitempty"`
	Name    string        `json:"name"`
	Command string        `json:"command,omitempty"`
	Args    []string      `json:"args,omitempty"`
	Env     []EnvVariable `json:"env,omitempty"`
	URL     string        `json:"url,omitempty"`
	Headers []HTTPHeader  `json:"headers,omitempty"`
	Meta    Meta          `json:"_meta,omitempty"`
}

// MCP server transports.
const (
	McpStdio = "stdio"
	McpHTTP  = "http"
	McpSSE   = "sse"
)

// Transport is the server's transport, McpStdio when the editor named none.
func (m McpServer) Transport() string {
	if m.Type == "" {
		return McpStdio
	}
	return m.Type
}

type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Meta  Meta   `json:"_meta,omitempty"`
}

// McpCapabilities are the MCP transports beyond stdio the agent connects
// to.
type McpCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// Bounds on what an editor may ask: a session's MCP servers each become a
// process or a connection.
const (
	maxMcpServers    = 32
	maxMcpNameLen    = 128
	maxMcpArgs       = 256
	maxMcpEnv        = 256
	maxMcpHeaders    = 64
	maxMcpStringSize = 64 << 10
)

// checkMcpServers checks the shape of mcpServers: what a server does with
// it (fails to start, dies) is the agent's to report, not a protocol error.
func checkMcpServers(servers []McpServer) error {
	if len(servers) > maxMcpServers {
		return NewInvalidParams("mcpServers has %d servers; at most %d are supported", len(servers), maxMcpServers)
	}
	names := make(map[string]int, len(servers)) // mcpToolKey -> index
	for i, m := range servers {
		if err := checkMcpName(servers, i, names); err != nil {
			return err
		}
		if err := checkMcpSizes(i, m); err != nil {
			return err
		}
		names[mcpToolKey(m.Name)] = i
		if err := checkMcpTransport(i, m); err != nil {
			return err
		}
	}
	return nil
}

// checkMcpName checks servers[i]'s name, given the servers before it
// (names: their mcpToolKey → index).
func checkMcpName(servers []McpServer, i int, names map[string]int) error {
	m := servers[i]
	first, dup := names[mcpToolKey(m.Name)]
	switch {
	case m.Name == "":
		return NewInvalidParams("mcpServers[%d].name is required", i)
	case len(m.Name) > maxMcpNameLen:
		return NewInvalidParams("mcpServers[%d].name is %d bytes; at most %d are allowed", i, len(m.Name), maxMcpNameLen)
	case dup && servers[first].Name == m.Name:
		return NewInvalidParams("mcpServers[%d] and mcpServers[%d] are both named %s; each MCP server needs a name of its own", first, i, quote(m.Name))
	case dup:
		return NewInvalidParams("mcpServers[%d] (%s) and mcpServers[%d] (%s) differ only in case or in characters a tool name cannot hold (both name their tools mcp__%s__…, ignoring case); each MCP server needs a name of its own",
			first, quote(servers[first].Name), i, quote(m.Name), mcpToolKey(m.Name))
	}
	return nil
}

// checkMcpSizes bounds what server i (m) asks to be started with.
func checkMcpSizes(i int, m McpServer) error {
	if len(m.Args) > maxMcpArgs || len(m.Env) > maxMcpEnv || len(m.Headers) > maxMcpHeaders {
		return NewInvalidParams("mcpServers[%d] (%s) has too many args, env or headers (at most %d, %d and %d)", i, quote(m.Name), maxMcpArgs, maxMcpEnv, maxMcpHeaders)
	}
	for _, s := range slices.Concat([]string{m.Command, m.URL}, m.Args) {
		if len(s) > maxMcpStringSize {
			return NewInvalidParams("mcpServers[%d] (%s) has a value of %d bytes; at most %d are allowed", i, quote(m.Name), len(s), maxMcpStringSize)
		}
	}
	pairs := make([][2]string, 0, len(m.Env)+len(m.Headers))
	for _, e := range m.Env {
		pairs = append(pairs, [2]string{e.Name, e.Value})
	}
	for _, h := range m.Headers {
		pairs = append(pairs, [2]string{h.Name, h.Value})
	}
	for _, kv := range pairs {
		if kv[0] == "" || len(kv[0])+len(kv[1]) > maxMcpStringSize {
			return NewInvalidParams("mcpServers[%d] (%s) has an env or header entry without a name, or too long", i, quote(m.Name))
		}
	}
	return nil
}

// checkMcpTransport checks that server i (m) has what its transport needs.
func checkMcpTransport(i int, m McpServer) error {
	switch m.Transport() {
	case McpStdio:
		if m.Command == "" {
			return NewInvalidParams("mcpServers[%d] (%s) is a stdio server: command is required", i, quote(m.Name))
		}
	case McpHTTP, McpSSE:
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return NewInvalidParams("mcpServers[%d] (%s) is an %s server: url must be an absolute http(s) URL, got %s", i, quote(m.Name), m.Type, quote(m.URL))
		}
	default:
		return NewInvalidParams("mcpServers[%d] (%s) has type %s; the transports are stdio (no type), http and sse", i, quote(m.Name), quote(m.Type))
	}
	return nil
}

// mcpToolKey is what two server names must not share: the agent names a
// server's tools mcp__<name>__<tool> with every character outside
// [A-Za-z0-9_-] made '_' (agent/mcp's sanitize), so names that map to one
// prefix, or to prefixes that differ only in case, would offer the model
// tools it cannot tell apart, and the agent would start only the first.
func mcpToolKey(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r)+'a'-'A')
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b = append(b, byte(r))
		default:
			b = append(b, '_')
		}
	}
	return string(b)
}

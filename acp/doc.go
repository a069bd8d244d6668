// Package acp holds the Agent Client Protocol (v1) wire types, the stdio
// JSON-RPC connection and the method dispatch. It knows nothing of providers
// or retries: it hands typed requests to an Agent and maps errors to wire
// errors once, on the way out.
//
// Where things are, one job per file:
//
// The wire: types.go (messages), tools.go (tool calls and session
// updates), mcp.go (MCP server entries), methods.go (method names),
// errors.go (codes, RequestError and its constructors).
//
// The connection, in the order a line passes through it: stream.go is
// LineStream, which joins the parts below (reading, refusing bad lines,
// writing, closing); linereader.go reads lines within the limit;
// decode.go reads one as a message or says why it is refused; ids.go
// carries request ids jsonrpc2 would alter back to the client byte for
// byte (idTable); writer.go is the output and its flush policy (lineWriter:
// the batched writer goroutine, the direct write of an idle line, which
// writenow_*.go allow when stdout takes it without blocking, and the
// bounded close); encode.go the line encoder.
//
// The server, for the agent's side: agent.go is the Agent interface and
// its optional ones; server.go the Server and Serve (also clip and quote,
// the text helpers the package shares), which joins the parts below:
// handshake.go is what initialize settles (the client's capabilities, what
// is advertised, a client that skipped it); inflight.go the work running in
// the agent, the running prompt of each session, the sessions being closed,
// and cancellation; shutdown.go the bounded stop (stopper); reply.go sends
// replies and maps errors to wire errors, once (replier). dispatch.go routes
// each method (Handle) and holds every handler: those of the methods that
// reach the agent, with handle, the one decode → check → call-the-agent
// shape most share, and those that consult the running prompts
// (session/prompt, cancel, close and delete); params.go decodes and checks
// params, providers.go those of providers/set; auth.go the sign-in types
// and which methods a client is offered.
//
// The editor, for the agent's calls back: editor.go is editorConn, the
// agent's Client (session updates, capabilities), and client.go its
// requests to the editor (permission, files, terminals); elicitation.go the
// sign-in forms (elicitation/create, FormAuthenticator).
package acp

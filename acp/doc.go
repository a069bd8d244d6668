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
// The connection, in the order a line passes through it: stream.go frames
// lines (LineStream: reading, refusing bad lines, closing), ids.go carries
// request ids jsonrpc2 would alter back to the client byte for byte, and
// writer.go is the batched writer goroutine, the direct write of an idle
// line (writenow_*.go: when stdout takes it without blocking), and the line
// encoder.
//
// The server, for the agent's side: agent.go is the Agent interface and
// its optional ones; server.go the Server's lifecycle (Serve, shutdown,
// the work it waits for; also clip and quote, the text helpers the
// package shares); dispatch.go routes each method (Handle) and
// holds handle, the one decode → check → call-the-agent shape most
// methods share; prompts.go the running-prompt registry (session/prompt,
// cancel, close and delete, which consult it); params.go decodes and checks
// params; reply.go sends replies and maps errors to wire errors, once;
// auth.go serves authenticate and logout.
//
// The editor, for the agent's calls back: editor.go is editorConn, the
// agent's Client (session updates, capabilities), and client.go its
// requests to the editor (permission, files, terminals).
package acp

package acp

import (
	"context"
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// editorConn is the Agent's view of the editor: the server's side of the
// connection, implementing Client. Not "client": elsewhere (internal/demo)
// that names a client of the agent, the opposite role. Its calls to the
// editor are in client.go.
type editorConn struct {
	s *Server
	c *jsonrpc2.Conn
}

var _ Client = editorConn{}

// Update sends a session/update notification. It is written before Update
// returns, so updates and the turn's reply keep the order they were made in.
// It does not refuse a cancelled ctx: the spec lets a cancelled turn send its
// last updates before it answers.
func (cl editorConn) Update(ctx context.Context, sessionID string, u SessionUpdate) error {
	line, err := updateLine(sessionID, u)
	if err != nil {
		return err
	}
	return cl.s.out.WriteLine(line)
}

// updateLine encodes a session/update notification as the line
// jsonrpc2.Conn.Notify would send (keys in the same order, the same escaping),
// once: Notify marshals the params, then the envelope around them, and the
// stream would check them a third time. Updates are most of what Rebound
// writes, one per streamed chunk.
func updateLine(sessionID string, u SessionUpdate) ([]byte, error) {
	update, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	id, err := json.Marshal(sessionID)
	if err != nil {
		return nil, err
	}
	const head = `{"jsonrpc":"2.0","method":"` + MethodSessionUpdate + `","params":{"sessionId":`
	line := make([]byte, 0, len(head)+len(id)+len(update)+len(`,"update":}}`)+1)
	line = append(append(append(append(line, head...), id...), `,"update":`...), update...)
	return append(line, "}}\n"...), nil
}

// Capabilities returns what the client advertised in initialize (zero
// before it).
func (cl editorConn) Capabilities() ClientCapabilities {
	return cl.s.hello.capabilities()
}

package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
)

// fuzzLimit is the line limit of the dispatch fuzz target.
const fuzzLimit = 2048

// expectedAnswers reads input as the server should. A request is a line
// within the limit that is a JSON object with a "method" string and an
// "id" that is a string, a number or null of at most MaxIDBytes: whatever
// else it holds, it gets exactly one response with that id (a result, or an
// error if it is not a valid request). Any other line with such an id may
// get one refusal with it (an invalid request) or none (a response).
// byID and maybe count them per id (its JSON as sent); nulls counts the
// requests with id null.
func expectedAnswers(in []byte) (byID, maybe map[string]int, nulls int) {
	byID, maybe = map[string]int{}, map[string]int{}
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		if len(line) > fuzzLimit {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(bytes.TrimSpace(line), &m) != nil {
			continue
		}
		method, id := m["method"], m["id"]
		if len(id) == 0 || len(id) > acp.MaxIDBytes {
			continue
		}
		if c := id[0]; c != 'n' && c != '"' && c != '-' && (c < '0' || c > '9') {
			continue
		}
		switch {
		case len(method) == 0 || method[0] != '"':
			maybe[string(id)]++
		case id[0] == 'n':
			nulls++
		default:
			byID[string(id)]++
		}
	}
	return byID, maybe, nulls
}

// FuzzServer_Dispatch sends arbitrary input through a Server with a quick
// fake agent. It must never panic or fail Serve; every output line is a
// JSON-RPC 2.0 message; every request with an id gets exactly one
// response, with its id exactly as sent; and no response carries an id
// no request had (a substitute leaking out, say). A client that never
// advertised reading Rebound's richer messages (no "notices" or
// "rebound/retry" anywhere in the input, nor an escape that could spell
// them) gets no error with data (RichErrors).
//
// Its seeds are in testdata/fuzz/FuzzServer_Dispatch.
//
//	go test -run '^$' -fuzz FuzzServer_Dispatch -fuzztime 10s ./acp
func FuzzServer_Dispatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		agent := &fakeAgent{
			NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
				return acp.NewSessionResponse{SessionID: "s"}, nil
			},
			LoadSessionFunc: func(ctx context.Context, req acp.LoadSessionRequest, c acp.Client) (acp.LoadSessionResponse, error) {
				return acp.LoadSessionResponse{}, c.Update(ctx, req.SessionID, textUpdate("replayed"))
			},
			PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
				if err := c.Update(ctx, req.SessionID, textUpdate("hi")); err != nil {
					return acp.PromptResponse{}, err
				}
				return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
			},
		}
		var out syncBuffer
		if err := acp.NewServer(agent, acp.Config{MaxLineBytes: fuzzLimit}).Serve(context.Background(), bytes.NewReader(in), &out); err != nil {
			t.Fatalf("Serve() = %v", err)
		}
		want, maybe, nulls := expectedAnswers(in)
		plain := !bytes.Contains(in, []byte("notices")) && !bytes.Contains(in, []byte("rebound/retry")) && !bytes.Contains(in, []byte(`\`))
		got := map[string]int{}
		for line := range strings.Lines(out.String()) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("output line is not a JSON-RPC 2.0 message: %q", line)
			}
			if _, ok := m["method"]; ok {
				continue // a session/update
			}
			id, ok := m["id"]
			_, result := m["result"]
			_, rpcErr := m["error"]
			if !ok || result == rpcErr {
				t.Fatalf("output line is not a response: %q", line)
			}
			var e struct {
				Data json.RawMessage `json:"data"`
			}
			if rpcErr && plain && json.Unmarshal(m["error"], &e) == nil && e.Data != nil {
				t.Errorf("an error with data for a client that did not ask for it: %q", line)
			}
			got[string(id)]++
		}
		if got["null"] < nulls {
			t.Errorf("%d responses with id null for %d requests with id null", got["null"], nulls)
		}
		delete(got, "null")
		delete(maybe, "null")
		for id, n := range want {
			if got[id] < n || got[id] > n+maybe[id] {
				t.Errorf("id %s: %d responses for %d requests (and %d other lines)", id, got[id], n, maybe[id])
			}
		}
		for id, n := range got {
			if want[id] == 0 && n > maybe[id] {
				t.Errorf("%d responses with id %s, which %d lines had", n, id, maybe[id])
			}
		}
	})
}

package acp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWireError_DataOnlyForRichClients is the property behind
// TestServer_ErrorDataByClient, over generated errors and capabilities:
// whatever the code, data and wrapping, the wire error keeps the code and
// message, and carries data exactly when the client has RichErrors and
// there is data.
func TestWireError_DataOnlyForRichClients(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 6))
	codes := []int{CodeParseError, CodeInvalidRequest, CodeMethodNotFound, CodeInvalidParams, CodeInternalError,
		CodeAuthRequired, CodeResourceNotFound, CodeSessionBusy, -32099, 1, 0}
	datas := []any{nil, "text", 3, []any{1, "a"}, map[string]any{}, map[string]any{"attempts": 3, "elapsedMs": 1600},
		map[string]any{"failure": map[string]any{"code": "OVERLOADED"}}, false}
	metas := []Meta{nil, {}, {MetaRetry: true}, {MetaRetry: false}, {MetaRetry: nil}, {MetaRetry: map[string]any{}},
		{TerminalAuthMetaKey: true}, {"terminal_output": true}}
	sessions := []*ClientSessionCapabilities{nil, {}, {Notices: json.RawMessage(`{}`)}, {Notices: json.RawMessage(`null`)},
		{Compaction: json.RawMessage(`{}`)}}
	for i := range 2000 {
		re := &RequestError{Code: codes[r.IntN(len(codes))], Message: fmt.Sprintf("message %d", i), Data: datas[r.IntN(len(datas))]}
		var err error = re
		for range r.IntN(3) {
			err = fmt.Errorf("wrapped: %w", err)
		}
		caps := ClientCapabilities{Meta: metas[r.IntN(len(metas))], Session: sessions[r.IntN(len(sessions))]}
		rich := caps.Notices() || (caps.Meta[MetaRetry] != nil && caps.Meta[MetaRetry] != false)
		if caps.RichErrors() != rich {
			t.Fatalf("RichErrors(%+v) = %v, want %v", caps, !rich, rich)
		}
		got := wireError(err, caps.RichErrors())
		if got.Code != int64(re.Code) || got.Message != re.Message {
			t.Fatalf("wireError(%v) = %d %q, want %d %q", err, got.Code, got.Message, re.Code, re.Message)
		}
		if want := (rich || re.Code == CodeAuthRequired) && re.Data != nil; (got.Data != nil) != want {
			t.Fatalf("wireError(%v, caps %+v): data %v, want data: %v", err, caps, got.Data != nil, want)
		}
	}
}

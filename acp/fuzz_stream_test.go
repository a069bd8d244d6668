package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

type fuzzRWC struct {
	io.Reader
	io.Writer
}

func (fuzzRWC) Close() error { return nil }

// FuzzLineStream_ReadObject feeds arbitrary bytes to the stdio framing. It
// must never panic; every ReadObject returns a request or io.EOF; every
// line it writes is a JSON-RPC error response with a null or short id;
// it answers at most one line per input line; its line buffer stays within
// the line limit; and a response to a request whose id was substituted
// goes out with the id the client sent, never the substitute.
//
// Its seeds are in testdata/fuzz/FuzzLineStream_ReadObject.
//
//	go test -run '^$' -fuzz FuzzLineStream_ReadObject -fuzztime 10s ./acp
func FuzzLineStream_ReadObject(f *testing.F) {
	const limit = 512
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		s := NewLineStream(fuzzRWC{bytes.NewReader(in), &out}, StreamConfig{MaxLineBytes: limit})
		reads := 0
		for {
			var req jsonrpc2.Request
			err := s.ReadObject(&req)
			if cap(s.in.buf) > 2*limit {
				t.Fatalf("line buffer grew to %d bytes, limit %d", cap(s.in.buf), limit)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("ReadObject() = %v, want nil or io.EOF", err)
			}
			reads++
			if !req.Notif && req.ID.IsString && strings.HasPrefix(req.ID.Str, idPrefix) {
				// Answer it as jsonrpc2.Conn would: the client's id must
				// come back.
				raw := json.RawMessage("null")
				if err := s.WriteObject(&jsonrpc2.Response{ID: req.ID, Result: &raw}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s.ids.held() != 0 {
			t.Errorf("%d substituted ids left after their responses", s.ids.held())
		}
		answered := 0
		for line := range strings.Lines(out.String()) {
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" || len(m.ID) == 0 {
				t.Fatalf("output line is not a JSON-RPC response: %q (%v)", line, err)
			}
			if len(m.ID) > MaxIDBytes || strings.Contains(line, `\u0000rebound-id:`) && !strings.Contains(string(in), `rebound-id:`) {
				t.Fatalf("output line has a bad id: %q", line)
			}
			if m.Result != nil {
				continue // an answer to a substituted id, checked above
			}
			if m.Error == nil || (m.Error.Code != CodeParseError && m.Error.Code != CodeInvalidRequest) || len(m.Error.Message) > 1024 {
				t.Fatalf("output line is not a refusal: %q", line)
			}
			answered++
		}
		if lines := bytes.Count(in, []byte("\n")) + 1; reads+answered > lines {
			t.Errorf("%d reads and %d refusals for %d lines", reads, answered, lines)
		}
	})
}

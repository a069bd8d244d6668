package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sourcegraph/jsonrpc2"
)

// MaxIDBytes bounds a request id as sent (its JSON text): a request with a
// longer id is refused with -32600 and id null, so no answer ever echoes
// more than this of what the client sent as an id.
const MaxIDBytes = 256

// checkID returns why raw, a request's id, is refused ("" if it is not).
// ACP ids are a string, an integer or null; JSON-RPC 2.0 also allows any
// number, so one with a fraction or beyond int64 is served too.
func checkID(raw json.RawMessage) string {
	switch c := raw[0]; {
	case c != 'n' && c != '"' && c != '-' && (c < '0' || c > '9'):
		return "Invalid Request: id must be a string, a number or null"
	case len(raw) > MaxIDBytes:
		return fmt.Sprintf("Invalid Request: id is %d bytes long; at most %d are accepted", len(raw), MaxIDBytes)
	}
	return ""
}

// idPrefix starts the string ids ReadObject gives jsonrpc2 in place of ids
// it would not carry back unchanged. jsonrpc2.ID holds a uint64 or a
// string: it casts a negative id to uint64 (-1 would be answered as
// 18446744073709551615), refuses numbers with a fraction or beyond int64,
// takes a request whose id is null for a notification (which would never be
// answered), and re-encodes strings, which may change their escapes. The
// response to such a request is written with the id as the client sent it.
// A client's own string id starting with idPrefix is substituted too, so a
// string with the prefix in a response is always one of ours.
const idPrefix = "\x00rebound-id:"

// respIDPrefix is how a jsonrpc2.Response answering a substituted id
// starts: its id member comes first.
var respIDPrefix = []byte(`{"id":"\u0000rebound-id:`)

// carriedAsIs reports whether jsonrpc2 answers with raw, a checked id,
// byte for byte: a non-negative integer within int64 written plainly, or a
// string that json.Marshal writes the same way and that does not start
// with idPrefix.
func carriedAsIs(raw json.RawMessage) bool {
	switch raw[0] {
	case 'n', '-':
		return false
	case '"':
		var str string
		if json.Unmarshal(raw, &str) != nil || strings.HasPrefix(str, idPrefix) {
			return false
		}
		b, err := json.Marshal(str)
		return err == nil && bytes.Equal(b, raw)
	}
	if len(raw) > 1 && raw[0] == '0' {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false // a fraction or an exponent
		}
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// substitute records raw under a new substitute id and returns its number.
func (s *LineStream) substitute(raw json.RawMessage) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[uint64]json.RawMessage{}
	}
	s.lastID++
	s.ids[s.lastID] = raw
	return s.lastID
}

func substituteJSON(n uint64) json.RawMessage {
	b, _ := json.Marshal(idPrefix + strconv.FormatUint(n, 10))
	return b
}

// takeID removes and returns the id substitute n stood for.
func (s *LineStream) takeID(n uint64) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, ok := s.ids[n]
	delete(s.ids, n)
	return raw, ok
}

// restoreID gives a response line written for a substituted id the id the
// client sent; other lines are returned as they are.
func (s *LineStream) restoreID(line []byte) []byte {
	if !bytes.HasPrefix(line, respIDPrefix) {
		return line
	}
	rest := line[len(respIDPrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return line
	}
	n, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return line
	}
	raw, ok := s.takeID(n)
	if !ok {
		return line
	}
	rest = rest[end+1:]
	out := make([]byte, 0, len(`{"id":`)+len(raw)+len(rest))
	return append(append(append(out, `{"id":`...), raw...), rest...)
}

// idText is the id the client sent for req's id, for logs.
func (s *LineStream) idText(id jsonrpc2.ID) string {
	if n, ok := strings.CutPrefix(id.Str, idPrefix); ok && id.IsString {
		if k, err := strconv.ParseUint(n, 10, 64); err == nil {
			s.mu.Lock()
			raw, ok := s.ids[k]
			s.mu.Unlock()
			if ok {
				return string(raw)
			}
		}
	}
	return id.String()
}

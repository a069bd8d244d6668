package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

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

// idTable holds the ids ReadObject substituted (see idPrefix), by number,
// until the response carrying them is written. Its own lock: ids are taken
// on the reading goroutine and given back on whichever writes the response.
type idTable struct {
	mu   sync.Mutex
	ids  map[uint64]json.RawMessage
	last uint64
}

// substitute records raw under a new substitute id and returns its number.
func (t *idTable) substitute(raw json.RawMessage) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[uint64]json.RawMessage{}
	}
	t.last++
	t.ids[t.last] = raw
	return t.last
}

func substituteJSON(n uint64) json.RawMessage {
	b, _ := json.Marshal(idPrefix + strconv.FormatUint(n, 10))
	return b
}

// take removes and returns the id substitute n stood for.
func (t *idTable) take(n uint64) (json.RawMessage, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	raw, ok := t.ids[n]
	delete(t.ids, n)
	return raw, ok
}

// held is how many substitutes wait for their response.
func (t *idTable) held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ids)
}

// restore gives a response line written for a substituted id the id the
// client sent; other lines are returned as they are.
func (t *idTable) restore(line []byte) []byte {
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
	raw, ok := t.take(n)
	if !ok {
		return line
	}
	rest = rest[end+1:]
	out := make([]byte, 0, len(`{"id":`)+len(raw)+len(rest))
	return append(append(append(out, `{"id":`...), raw...), rest...)
}

// text is the id the client sent for a request's id, for logs.
func (t *idTable) text(id jsonrpc2.ID) string {
	if n, ok := strings.CutPrefix(id.Str, idPrefix); ok && id.IsString {
		if k, err := strconv.ParseUint(n, 10, 64); err == nil {
			t.mu.Lock()
			raw, ok := t.ids[k]
			t.mu.Unlock()
			if ok {
				return string(raw)
			}
		}
	}
	return id.String()
}

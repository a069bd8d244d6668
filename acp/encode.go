package acp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// lineEncoder marshals one line; pooled so WriteObject allocates nothing
// for itself. Encode writes json.Marshal's bytes (HTML escaping included)
// and '\n'.
type lineEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var lineEncoders = sync.Pool{New: func() any {
	e := new(lineEncoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// encode returns json.Marshal's bytes for v and '\n'. The result is valid
// until e is put back.
func (e *lineEncoder) encode(v any) ([]byte, error) {
	if m, ok := v.(json.Marshaler); ok && fromJSONRPC2(v) {
		// jsonrpc2.Conn's messages marshal themselves with json.Marshal,
		// so their bytes are what json.Marshal(v) would write: it would
		// only check and compact them again, a third scan of every
		// message. The quick check below covers what compacting could
		// still change.
		b, err := m.MarshalJSON()
		if err != nil {
			return nil, &json.MarshalerError{Type: reflect.TypeOf(v), Err: err}
		}
		if compactEscaped(b) {
			return append(b, '\n'), nil
		}
	}
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// fromJSONRPC2 reports whether v is one of the jsonrpc2 package's types,
// or a non-nil pointer to one.
func fromJSONRPC2(v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return false
		}
		rv = rv.Elem()
	}
	return rv.Type().PkgPath() == jsonrpc2PkgPath
}

var jsonrpc2PkgPath = reflect.TypeFor[jsonrpc2.Request]().PkgPath()

// compactEscaped reports whether b, which must be valid JSON, is left as it
// is by json.Marshal's compacting of a Marshaler's output: no whitespace
// outside strings, and no '<', '>', '&', U+2028 or U+2029 to escape.
func compactEscaped(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !jsonSpecial[c] {
			continue
		}
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2:
			if i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8 {
				return false
			}
		case c == '"':
			inString = !inString
		case inString:
			if c == '\\' {
				i++ // the escaped byte can't end the string
			}
		default: // whitespace outside a string
			return false
		}
	}
	return true
}

// jsonSpecial marks the bytes compactEscaped looks at.
var jsonSpecial = [256]bool{'<': true, '>': true, '&': true, 0xE2: true, '"': true, '\\': true, ' ': true, '\t': true, '\n': true, '\r': true}

func (e *lineEncoder) put() {
	if e.buf.Cap() > maxSpare {
		return // don't keep a big message's buffer
	}
	e.buf.Reset()
	lineEncoders.Put(e)
}

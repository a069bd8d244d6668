package session

import (
	"encoding/json"
	"strconv"
	"time"
)

// appendRecord appends ev's line, '\n' included, to dst: the bytes of
// json.Marshal(ev) and a newline, written out without reflection because
// Append runs for every streamed chunk. ev.Data must be the output of
// json.Marshal (compact, HTML-escaped). An event whose type or time would
// be escaped or formatted otherwise goes through json.Marshal. On error dst
// is returned unchanged.
func appendRecord(dst []byte, ev Event) ([]byte, error) {
	if !plainJSONString(ev.Type) || ev.Time.Location() != time.UTC || ev.Time.Year() < 0 || ev.Time.Year() > 9999 {
		line, err := json.Marshal(ev)
		if err != nil {
			return dst, err
		}
		return append(append(dst, line...), '\n'), nil
	}
	b := append(dst, `{"seq":`...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"v":`...)
	b = strconv.AppendInt(b, int64(ev.V), 10)
	b = append(b, `,"time":"`...)
	b = ev.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":"`...)
	b = append(b, ev.Type...)
	b = append(b, `","data":`...)
	b = append(b, ev.Data...)
	return append(b, "}\n"...), nil
}

// plainJSONString reports whether s is encoded by encoding/json as itself
// between quotes: printable ASCII without '"', '\\' or the HTML-escaped
// '<', '>' and '&'. Event types are.
func plainJSONString(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

package config

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"unicode"
)

// errorBody answers every request with status and body.
type errorBody struct {
	status int
	body   string
}

func (e errorBody) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: e.status, Status: http.StatusText(e.status), Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(e.body)), Request: req}, nil
}

// Property: whatever a provider (or a proxy before it) answers the model
// list with, what rebound login prints of it on the terminal moves no
// cursor, sets no title or clipboard and reorders no text: no control or
// format character but the newlines of its own lines, and a bounded
// length. Found by driving `rebound login` against a server whose error
// said "\x1b]0;…\x07\x1b[2J": the terminal's title changed and it was
// cleared.
func TestChooseModel_ProviderTextIsInert(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	hostile := []string{"\x1b]0;PWNED\x07", "\x1b[2J", "\x1b[31m", "\x9b31m", "\x07", "\r", "\b", "\u202e", "\u2066", "\x00", "\x7f", "é", "ok", "\t", "\n"}
	words := func() string {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(hostile[r.IntN(len(hostile))])
		}
		return b.String()
	}
	for range 300 {
		msg := words()
		var body string
		switch r.IntN(3) {
		case 0:
			body = `{"error":{"message":` + jsonString(msg) + `,"type":` + jsonString(words()) + `}}`
		case 1:
			body = "<html>" + msg + "</html>" // not JSON: quoted whole
		default:
			body = msg + strings.Repeat("x", r.IntN(20000))
		}
		var shown bytes.Buffer
		_, listErr, err := chooseModel(context.Background(), "http://127.0.0.1:9/v1", "k", errorBody{[]int{400, 404, 500, 502}[r.IntN(4)], body}, strings.NewReader("m\n"), &shown)
		if err != nil || listErr == nil {
			t.Fatalf("chooseModel: %v, %v", listErr, err)
		}
		out := shown.String()
		if i := strings.IndexFunc(out, func(c rune) bool {
			return c != '\n' && (unicode.IsControl(c) || unicode.Is(unicode.Cf, c))
		}); i >= 0 {
			t.Fatalf("the terminal was shown %q (at byte %d) of a provider's answer %q", out[i:min(len(out), i+12)], i, body[:min(len(body), 200)])
		}
		if len(out) > 2000 {
			t.Fatalf("the terminal was shown %d bytes of a provider's answer", len(out))
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

package acp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
)

var (
	errNoDial = errors.New("no dialling in this test")
	noDial    = &http.Transport{
		DialContext:    func(context.Context, string, string) (net.Conn, error) { return nil, errNoDial },
		DialTLSContext: func(context.Context, string, string) (net.Conn, error) { return nil, errNoDial },
	}
)

// Property: a providers/set the server lets through names headers net/http
// sends as they are, and a base URL it can send a request to; whatever
// else the client sends is refused with invalid params.
func TestCheckSetProvider_AcceptsOnlyWhatHTTPSends(t *testing.T) {
	const alphabet = "aZ09-_.: \r\n\x00\"()/@\u00e9\x7f"
	r := rand.New(rand.NewPCG(7, 7))
	word := func() string {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	urls := []string{"https://gw.example.com/v1", "http://127.0.0.1:8080", "ftp://x/", "https://u:p@h/", "//h/v1", "https:///v1", "not a url", "", "https://h/" + strings.Repeat("a", maxProviderURLBytes),
		"https://gw.example.com/v1?key=k", "https://gw.example.com/v1?", "https://gw.example.com/v1#x", "https://gw.example.com/v1#"}
	accepted := 0
	for range 3000 {
		p := SetProviderRequest{ProviderID: "main", APIType: "openai", BaseURL: urls[r.IntN(len(urls))], Headers: map[string]string{word(): word()}}
		err := checkSetProvider(&p)
		if err != nil {
			if re, ok := err.(*RequestError); !ok || re.Code != CodeInvalidParams {
				t.Fatalf("checkSetProvider(%+v) = %v, want invalid params", p, err)
			}
			continue
		}
		accepted++
		req, rerr := http.NewRequest(http.MethodPost, p.BaseURL+"/chat/completions", nil)
		if rerr != nil {
			t.Fatalf("accepted baseUrl %q makes no request: %v", p.BaseURL, rerr)
		}
		// Rebound appends each endpoint to the base URL: a query or
		// fragment there would swallow it (and a key in a query would be
		// logged with the URL).
		if !strings.HasSuffix(req.URL.Path, "/chat/completions") {
			t.Fatalf("accepted baseUrl %q sends a request for /chat/completions to %q", p.BaseURL, req.URL.Path)
		}
		if req.URL.User != nil {
			t.Fatalf("accepted baseUrl %q holds credentials", p.BaseURL)
		}
		for k, v := range p.Headers {
			req.Header.Set(k, v)
		}
		// The transport checks header names and values before it dials.
		if _, rerr := noDial.RoundTrip(req); !errors.Is(rerr, errNoDial) {
			t.Fatalf("accepted headers %q make a request net/http refuses: %v", p.Headers, rerr)
		}
	}
	if accepted == 0 {
		t.Fatal("nothing accepted: the property checked nothing")
	}
}

// Property: headers a providers/set is let through name each header once:
// two names that differ only in case are one HTTP header, and which value
// went was a draw of Go's map order (an Authorization and an
// authorization sent either key).
func TestCheckSetProvider_OneValuePerHeader(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	names := []string{"Authorization", "authorization", "AUTHORIZATION", "X-Key", "x-key", "X-Other"}
	for range 500 {
		h := map[string]string{}
		for range 1 + r.IntN(3) {
			h[names[r.IntN(len(names))]] = fmt.Sprint(r.IntN(1000))
		}
		p := SetProviderRequest{ProviderID: "main", APIType: "openai", BaseURL: "https://gw.example/v1", Headers: h}
		if checkSetProvider(&p) != nil {
			continue
		}
		seen := map[string]bool{}
		for k := range h {
			c := http.CanonicalHeaderKey(k)
			if seen[c] {
				t.Fatalf("headers %q accepted: %s named twice", h, c)
			}
			seen[c] = true
		}
	}
}

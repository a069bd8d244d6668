package mcp

import (
	"net/http"
	"net/url"
	"testing"
)

type recordingRT struct{ hosts *[]string }

func (r recordingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	*r.hosts = append(*r.hosts, req.URL.Host)
	return &http.Response{StatusCode: 204, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// An HTTP server's requests go through the transport Options.HTTP makes
// (Rebound's proxy and certificate authorities), one per server.
func TestHTTPTransport_UsesOptionsHTTP(t *testing.T) {
	var hosts []string
	made := 0
	newBase := func() http.RoundTripper { made++; return recordingRT{&hosts} }
	u, _ := url.Parse("https://mcp.invalid/mcp")
	client := &http.Client{Transport: newHTTPTransport(t.Context(), u, nil, newBase)}
	resp, err := client.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if made != 1 || len(hosts) != 1 || hosts[0] != "mcp.invalid" {
		t.Errorf("made %d transports, requests to %q; want 1 and [mcp.invalid]", made, hosts)
	}
}

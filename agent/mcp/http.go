package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on what an HTTP server can make Rebound buffer. The SDK reads a
// JSON response or an error body whole, so the transport caps them; an
// event stream is capped per event by the SDK (maxFrame).
const (
	maxFrame     = 8 << 20  // one JSON-RPC message or server-sent event
	maxErrorBody = 64 << 10 // the body of a non-2xx response
)

// httpTransport is the RoundTripper under every request to one server. It
// adds the spec's headers, but only to requests to the spec's own origin, so
// a redirect or an SSE message endpoint elsewhere never receives the user's
// credentials; it ties every request to ctx, so Close aborts them all, the
// SDK's detached streams included; it bounds response bodies; and it keeps
// the last HTTP error status for start failure messages.
type httpTransport struct {
	base    http.RoundTripper
	origin  string // scheme://host[:port] of the spec's URL
	headers []KV
	ctx     context.Context

	lastStatus atomic.Int64 // last status ≥ 400, 0 after a success
}

// NewHTTP makes the transport under one HTTP server's requests; each
// server gets its own, as each has its own connections.
type NewHTTP func() http.RoundTripper

func newHTTPTransport(ctx context.Context, u *url.URL, headers []KV, newBase NewHTTP) *httpTransport {
	var base http.RoundTripper
	if newBase != nil {
		base = newBase()
	} else {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &httpTransport{base: base, origin: origin(u), headers: headers, ctx: ctx}
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.ctx.Err(); err != nil {
		return nil, errors.New("the MCP server's connection is closed")
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.ctx, cancel)
	release := func() { stop(); cancel() }
	req = req.Clone(ctx) // a RoundTripper must not change the caller's request
	if origin(req.URL) == t.origin {
		for _, h := range t.headers {
			req.Header.Del(h.Name)
		}
		for _, h := range t.headers {
			req.Header.Add(h.Name, h.Value)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		release()
		return nil, err
	}
	if resp.StatusCode >= 400 {
		t.lastStatus.Store(int64(resp.StatusCode))
	} else {
		t.lastStatus.Store(0)
	}
	limit := int64(-1)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode >= 300:
		limit = maxErrorBody
	case mt != "text/event-stream":
		limit = maxFrame
	}
	resp.Body = &boundedBody{rc: resp.Body, limit: limit, left: limit, release: release}
	return resp, nil
}

// statusError describes the last HTTP error status, or returns nil.
func (t *httpTransport) statusError() error {
	code := int(t.lastStatus.Load())
	if code == 0 {
		return nil
	}
	return fmt.Errorf("the HTTP server answered %d %s", code, http.StatusText(code))
}

// boundedBody fails a read past its limit (negative: no limit) and releases
// the request's context when closed.
type boundedBody struct {
	rc      io.ReadCloser
	limit   int64
	left    int64
	release func()
	once    sync.Once
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left == 0 { // a body of exactly limit bytes is fine: look for one more
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the MCP server's response is larger than %d bytes", b.limit)
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.release)
	return err
}

// detachedConnect connects a transport with ctx instead of the caller's
// context. The SDK's SSE transport keeps the context of Connect for its
// event stream, so the start timeout passed to Client.Connect would end the
// session when it expires; ctx lives until Close.
type detachedConnect struct {
	sdk.Transport
	ctx context.Context
}

func (d detachedConnect) Connect(context.Context) (sdk.Connection, error) {
	return d.Transport.Connect(d.ctx)
}

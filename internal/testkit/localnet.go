package testkit

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// LocalNet stands in for DNS and the network in tests of proxies: a name
// in Names maps to an address on this machine, a loopback address is
// dialled as it is, and anything else is refused, so a request that
// bypassed the proxy fails in the test instead of leaving the machine.
type LocalNet struct {
	mu    sync.Mutex
	Names map[string]string // host:port → 127.0.0.1:port
	dials []string
}

// Dial is a DialContext.
func (n *LocalNet) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, addr)
	to, ok := n.Names[addr]
	n.mu.Unlock()
	if !ok {
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("test network: %s is not on this machine", addr)
		}
		to = addr
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}

// Dialled returns the addresses dialled since the last call, and forgets
// them.
func (n *LocalNet) Dialled() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.dials
	n.dials = nil
	return d
}

// Proxy is an HTTP proxy: CONNECT tunnels to what its LocalNet maps the
// target to; a plain request in absolute form is answered by the proxy
// itself ("from the proxy"). It records what it was asked for.
type Proxy struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

// NewProxy starts a Proxy dialling through ln, closed with the test.
func NewProxy(t testing.TB, ln *LocalNet) *Proxy {
	p := &Proxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.got = append(p.got, r.Method+" "+r.RequestURI)
		p.mu.Unlock()
		if r.Method != http.MethodConnect {
			fmt.Fprint(w, "from the proxy")
			return
		}
		up, err := ln.Dial(r.Context(), "tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		fmt.Fprint(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	t.Cleanup(p.Close)
	return p
}

// Requests returns what the proxy was asked for since the last call
// ("CONNECT host:443", "GET http://…"), and forgets it.
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}

// TLSServer starts h over TLS with httptest's own certificate authority
// (its certificate is for example.com, 127.0.0.1 and ::1), and writes that
// certificate to a PEM file.
func TLSServer(t testing.TB, h http.Handler) (srv *httptest.Server, caFile string) {
	srv = httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return srv, caFile
}

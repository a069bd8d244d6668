package netclient_test

import (
	"crypto/x509"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/netclient"
	"github.com/rebound-agent/rebound/internal/testkit"
)

type env map[string]string

func (e env) get(k string) string { return e[k] }

var fromServer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "from the server") })

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// HTTPS_PROXY carries an https request through CONNECT; NO_PROXY sends the
// same request straight to the server.
func TestTransport_ProxyAndNoProxy(t *testing.T) {
	srv, ca := testkit.TLSServer(t, fromServer)
	// httptest's certificate is for example.com: the name is only ever
	// mapped to the local server, never looked up.
	names := map[string]string{"example.com:443": srv.Listener.Addr().String()}
	ln := &testkit.LocalNet{Names: names}
	proxy := testkit.NewProxy(t, &testkit.LocalNet{Names: names})
	connect := []string{"CONNECT example.com:443"}
	for _, tt := range []struct {
		name      string
		env       env
		wantProxy []string
	}{
		{"HTTPS_PROXY", env{"HTTPS_PROXY": proxy.URL}, connect},
		{"https_proxy", env{"https_proxy": proxy.URL}, connect},
		{"HTTP_PROXY is not for https", env{"HTTP_PROXY": proxy.URL}, nil},
		{"NO_PROXY by name", env{"HTTPS_PROXY": proxy.URL, "NO_PROXY": "localhost,example.com"}, nil},
		{"no_proxy by domain", env{"HTTPS_PROXY": proxy.URL, "no_proxy": ".com"}, nil},
		{"NO_PROXY *", env{"HTTPS_PROXY": proxy.URL, "NO_PROXY": "*"}, nil},
		{"NO_PROXY of another host", env{"HTTPS_PROXY": proxy.URL, "NO_PROXY": "example.org,1.2.3.4"}, connect},
		{"no proxy", env{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proxy.Requests()
			ln.Dialled()
			c, err := netclient.Client(netclient.Options{Getenv: tt.env.get, CAFile: ca, CAFrom: "test", DialContext: ln.Dial})
			if err != nil {
				t.Fatal(err)
			}
			if body, err := get(c, "https://example.com/v1/models"); err != nil || body != "from the server" {
				t.Fatalf("GET = %q, %v", body, err)
			}
			if got := proxy.Requests(); !slices.Equal(got, tt.wantProxy) {
				t.Errorf("the proxy was asked for %q, want %q", got, tt.wantProxy)
			}
			wantDial := []string{"example.com:443"}
			if tt.wantProxy != nil {
				wantDial = []string{proxy.Listener.Addr().String()}
			}
			if got := ln.Dialled(); !slices.Equal(got, wantDial) {
				t.Errorf("the client dialled %q, want %q", got, wantDial)
			}
		})
	}
}

// HTTP_PROXY carries a plain http request, in absolute form.
func TestTransport_HTTPProxy(t *testing.T) {
	ln := &testkit.LocalNet{}
	proxy := testkit.NewProxy(t, ln)
	c, err := netclient.Client(netclient.Options{Getenv: env{"HTTP_PROXY": proxy.URL}.get, DialContext: ln.Dial})
	if err != nil {
		t.Fatal(err)
	}
	body, err := get(c, "http://provider.invalid/v1/models")
	if err != nil || body != "from the proxy" {
		t.Fatalf("GET = %q, %v; want the proxy's answer", body, err)
	}
	if got := proxy.Requests(); !slices.Equal(got, []string{"GET http://provider.invalid/v1/models"}) {
		t.Errorf("the proxy was asked for %q", got)
	}
}

// A server whose CA only the CA file holds is reached with the file, and
// refused without it by an error naming the settings that give one.
func TestTransport_CAFile(t *testing.T) {
	srv, ca := testkit.TLSServer(t, fromServer)
	c, err := netclient.Client(netclient.Options{Getenv: env{}.get})
	if err != nil {
		t.Fatal(err)
	}
	_, err = get(c, srv.URL)
	if err == nil {
		t.Fatal("a server signed by an unknown CA was reached without the CA file")
	}
	for _, want := range []string{"provider.ca_file", netclient.EnvCAFile, "unknown authority"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	for _, only := range []bool{false, true} {
		c, err := netclient.Client(netclient.Options{Getenv: env{}.get, CAFile: ca, CAFrom: netclient.EnvCAFile, CAOnly: only})
		if err != nil {
			t.Fatal(err)
		}
		if body, err := get(c, srv.URL); err != nil || body != "from the server" {
			t.Errorf("CAOnly %v: GET = %q, %v", only, body, err)
		}
	}
}

func TestTransport_BadCAFile(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello\n"), 0o644)
	for _, tt := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "missing.pem"), "no such file"},
		{"not PEM", notPEM, "no PEM certificate"},
		{"directory", dir, "not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := netclient.Transport(netclient.Options{CAFile: tt.path, CAFrom: "provider.ca_file in /x/config.toml"})
			if err == nil {
				t.Fatal("Transport() = nil error")
			}
			for _, want := range []string{"provider.ca_file in /x/config.toml", tt.path, tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// The CA file adds to the system's authorities, unless only it is asked
// for.
func TestTransport_SystemPoolKept(t *testing.T) {
	_, ca := testkit.TLSServer(t, fromServer)
	sys, err := x509.SystemCertPool()
	if err != nil || len(sys.Subjects()) == 0 { //nolint:staticcheck // only counted
		t.Skipf("no system certificate authorities here: %v", err)
	}
	pem, _ := os.ReadFile(ca)
	want := sys.Clone()
	want.AppendCertsFromPEM(pem)
	only := x509.NewCertPool()
	only.AppendCertsFromPEM(pem)
	for _, tt := range []struct {
		only bool
		want *x509.CertPool
	}{{false, want}, {true, only}} {
		got, err := netclient.CAPool(ca, tt.only)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(tt.want) {
			t.Errorf("CAPool(only %v) is not the expected pool", tt.only)
		}
	}
}

// Property: a proxy variable is either used for the requests it is for or
// refused by CheckProxies, naming the variable and never its password;
// never dropped in silence. (golang.org/x/net's httpproxy drops a value
// that does not parse and sends every request straight to the server: a
// user whose company requires its proxy had no word of it. Found by
// driving the binary with HTTP_PROXY=http://user:s3cret@proxy%zz:3128.)
func TestCheckProxies_UsedOrRefused(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	for range 2000 {
		v := pick("", "http://", "https://", "socks5://", "ftp://", "HTTP://", "http://http://", "//") +
			pick("", "user:s3cret@", "u:s3cret%zz@", "s3cret@") +
			pick("proxy.corp", "proxy corp", "proxy%zz", "10.0.0.1", "[::1", "[fe80::1]", "", "pröxy.corp") +
			pick("", ":3128", ":99x", ":", ":-1") + pick("", "/", "/path", "?q=1", "#f", " ")
		name := pick("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
		e := env{name: v}
		err := netclient.CheckProxies(e.get)
		if err != nil {
			if !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("CheckProxies(%s=%q) = %q: want the variable named and no password", name, v, err)
			}
			continue
		}
		tr, terr := netclient.Transport(netclient.Options{Getenv: e.get})
		if terr != nil {
			t.Fatalf("Transport(%s=%q): %v after CheckProxies passed it", name, v, terr)
		}
		scheme := "https"
		if strings.EqualFold(name, "HTTP_PROXY") {
			scheme = "http"
		}
		req, _ := http.NewRequest(http.MethodGet, scheme+"://provider.example/v1/models", nil)
		u, perr := tr.Proxy(req)
		if v == "" {
			if u != nil || perr != nil {
				t.Fatalf("no %s: proxy %v, %v", name, u, perr)
			}
			continue
		}
		if perr != nil || u == nil || u.Host == "" {
			t.Fatalf("%s=%q passed CheckProxies, yet the request for %s goes by proxy %v (%v)", name, v, req.URL, u, perr)
		}
		if !strings.Contains(strings.ToLower(v), strings.ToLower(u.Hostname())) {
			t.Fatalf("%s=%q passed CheckProxies, yet the request goes by %q", name, v, u.Host)
		}
	}
}

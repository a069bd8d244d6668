// Package netclient builds the HTTP transport Rebound reaches servers with
// (the model provider, MCP servers over HTTP, a provider's model list): the
// proxy the environment names (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, as an
// editor such as Zed passes them to agents), and the system's certificate
// authorities plus, when one is configured, a CA file of the user's.
package netclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// EnvCAFile names a PEM file of extra certificate authorities; it
// overrides provider.ca_file.
const EnvCAFile = "REBOUND_CA_FILE"

// maxCAFile bounds the read: a bundle of a few hundred certificates.
const maxCAFile = 4 << 20

// Options say how to reach servers.
type Options struct {
	// Getenv reads the proxy variables; nil reads none. It is not
	// http.ProxyFromEnvironment, which reads the process's environment
	// once and for good, so tests and callers with their own environment
	// could not give theirs.
	Getenv func(string) string
	// CAFile is a PEM file of certificate authorities trusted besides the
	// system's; "" for none. CAFrom names the setting that gave it
	// ("provider.ca_file in /home/u/.config/rebound/config.toml",
	// "REBOUND_CA_FILE"), for errors.
	CAFile, CAFrom string
	// CAOnly trusts the CA file alone, not the system's authorities.
	CAOnly bool
	// DialContext, when set, replaces the dialer (tests: a dialer that
	// reaches only addresses on this machine).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Transport is http.DefaultTransport's settings with the proxy and the
// certificate authorities of o. Its errors name the setting at fault (a
// proxy variable that is no proxy URL too: CheckProxies).
func Transport(o Options) (*http.Transport, error) {
	if err := CheckProxies(o.Getenv); err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = proxyFunc(o.Getenv)
	if o.DialContext != nil {
		t.DialContext = o.DialContext
	}
	if o.CAFile != "" {
		pool, err := CAPool(o.CAFile, o.CAOnly)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.CAFrom, err)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return t, nil
}

// Client is an *http.Client over Transport(o) whose failures to verify a
// server's certificate say which setting gives a CA. It has no overall
// timeout: callers bound their requests (a streamed reply can be long).
func Client(o Options) (*http.Client, error) {
	t, err := Transport(o)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: HintCA(t, o.CAFile, o.CAFrom)}, nil
}

// proxyFunc is http.ProxyFromEnvironment's rule (the upper-case variable,
// else the lower-case one; NO_PROXY's names, domains and CIDRs; no proxy
// for localhost and loopback addresses) over getenv.
func proxyFunc(getenv func(string) string) func(*http.Request) (*url.URL, error) {
	if getenv == nil {
		return nil
	}
	either := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return getenv(lower(name))
	}
	f := (&httpproxy.Config{
		HTTPProxy:  either("HTTP_PROXY"),
		HTTPSProxy: either("HTTPS_PROXY"),
		NoProxy:    either("NO_PROXY"),
	}).ProxyFunc()
	return func(req *http.Request) (*url.URL, error) { return f(req.URL) }
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// CAPool is the system's certificate authorities (none when only) plus
// those of the PEM file at path. The error says what is wrong with the
// file, not which setting named it.
func CAPool(path string, only bool) (*x509.CertPool, error) {
	f, err := regfile.Open(path) // a FIFO would block the start
	if err != nil {
		if errors.Is(err, regfile.ErrNotRegular) {
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxCAFile {
		return nil, fmt.Errorf("%s is larger than %d MiB, which no file of certificates is", path, maxCAFile>>20)
	}
	pool := x509.NewCertPool()
	if !only {
		// Where the system's pool cannot be had, the file's CAs alone
		// are better than refusing to start.
		if sys, err := x509.SystemCertPool(); err == nil && sys != nil {
			pool = sys
		}
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", path)
	}
	return pool, nil
}

// CheckCAFile says what is wrong with the CA file at path, or nil.
func CheckCAFile(path string) error {
	_, err := CAPool(path, true)
	return err
}

// HintCA wraps next so that a server certificate no trusted authority
// signed fails with the setting that adds one: without it, "x509:
// certificate signed by unknown authority" leaves a user behind a
// company's TLS-inspecting proxy nowhere to go.
func HintCA(next http.RoundTripper, caFile, caFrom string) http.RoundTripper {
	return hintCA{next: next, caFile: caFile, caFrom: caFrom}
}

type hintCA struct {
	next           http.RoundTripper
	caFile, caFrom string
}

func (h hintCA) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err == nil {
		return resp, nil
	}
	if !IsUntrusted(err) {
		return resp, err
	}
	if h.caFile == "" {
		return resp, fmt.Errorf("%w (if %s uses a private certificate authority, or a proxy that inspects TLS does, give the authority's PEM file in provider.ca_file or %s)", err, req.URL.Host, EnvCAFile)
	}
	return resp, fmt.Errorf("%w (trusted: the system's authorities and those in %s from %s; is that the authority that signed %s's certificate?)", err, h.caFile, h.caFrom, req.URL.Host)
}

// IsUntrusted reports whether err is a server certificate no trusted
// authority signed.
func IsUntrusted(err error) bool {
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &verify)
}

// proxyVars are the variables proxyFunc reads, each before its lower-case
// form.
var proxyVars = []string{"HTTPS_PROXY", "HTTP_PROXY"}

// CheckProxies is nil, or says which proxy variable of getenv's (the one
// proxyFunc uses: upper case, else lower) is no proxy URL, never quoting
// a password in it. golang.org/x/net's httpproxy drops a value it cannot
// parse and sends the requests straight to the server: where a company
// requires its proxy, they would leave without it, and nothing said so.
func CheckProxies(getenv func(string) string) error {
	if getenv == nil {
		return nil
	}
	for _, name := range proxyVars {
		v := getenv(name)
		if v == "" {
			name = lower(name)
			v = getenv(name)
		}
		if v == "" {
			continue
		}
		if problem := checkProxy(v); problem != "" {
			return fmt.Errorf("%s: %s, got %q: give a proxy URL such as http://proxy.example:3128", name, problem, redactProxy(v))
		}
	}
	return nil
}

// checkProxy says what is wrong with a proxy variable's value v, or "". It
// reads v as httpproxy does (a URL, or host:port taken as http://host:port)
// and refuses what httpproxy would drop or read as another host.
func checkProxy(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if strings.Contains(v, "://") {
			// httpproxy would try http://v, and read its scheme as the
			// host: "http://http://…".
			return "not a URL"
		}
		if u, err = url.Parse("http://" + v); err != nil {
			return "not a URL"
		}
	}
	switch {
	case u.Hostname() == "":
		return "no proxy host in it"
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5" && u.Scheme != "socks5h":
		return "the scheme must be http, https, socks5 or socks5h"
	}
	return ""
}

// redactProxy is v with whatever comes before its last @ after the scheme
// hidden: a user name and password.
func redactProxy(v string) string {
	at := strings.LastIndexByte(v, '@')
	if at < 0 {
		return v
	}
	start := 0
	if i := strings.Index(v, "://"); i >= 0 && i < at {
		start = i + 3
	}
	return v[:start] + "xxxxx" + v[at:]
}

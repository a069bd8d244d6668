package recovery_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// failingDoer fails every request the way *http.Client does: a *url.Error
// naming the request's URL around the dial or TLS error.
type failingDoer struct{ err error }

func (d failingDoer) Do(req *http.Request) (*http.Response, error) {
	return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: d.err}
}

func dialErr(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

var (
	errNXDOMAIN  = dialErr(&net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true})
	errDNSFlaky  = dialErr(&net.DNSError{Err: "server misbehaving", Name: "api.example.com", Server: "127.0.0.53:53", IsTemporary: true})
	errRefused   = dialErr(os.NewSyscallError("connect", syscall.ECONNREFUSED))
	errReset     = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	errTimeout   = dialErr(os.ErrDeadlineExceeded)
	errUnknownCA = &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	errHostname  = &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "api.example.com"}}
)

// Issue #14: a connection failure names where it went and why, and a cause
// that waiting cannot heal (NXDOMAIN, a certificate) is not retried.
func TestClassify_ConnectionFailures(t *testing.T) {
	type facts struct {
		Code      recovery.Code
		Endpoint  string
		Cause     recovery.Cause
		Permanent bool
		Summary   string
	}
	tests := []struct {
		name, baseURL string
		err           error
		want          facts
		wantAdvice    string // a part of Advice
	}{
		{"DNS name not found", "https://api.example.invalid/v1", errNXDOMAIN,
			facts{recovery.Transport, "https://api.example.invalid", recovery.CauseDNSNotFound, true,
				"The connection to https://api.example.invalid failed: DNS name not found"},
			"Check the host name in the base URL: https://api.example.invalid does not exist in DNS."},
		{"DNS server trouble heals", "https://api.example.com/v1", errDNSFlaky,
			facts{recovery.Transport, "https://api.example.com", recovery.CauseDNS, false,
				"The connection to https://api.example.com failed: DNS lookup failed"},
			"your DNS"},
		{"connection refused", "http://localhost:8000/v1", errRefused,
			facts{recovery.Transport, "http://localhost:8000", recovery.CauseRefused, false,
				"The connection to http://localhost:8000 failed: connection refused"},
			"check the base URL's host and port, and that the server is running"},
		{"connection reset", "https://api.example.com/v1", errReset,
			facts{recovery.Transport, "https://api.example.com", recovery.CauseReset, false,
				"The connection to https://api.example.com failed: connection reset"},
			"Check the base URL and your network connection."},
		{"dial timeout", "https://api.example.com/v1", errTimeout,
			facts{recovery.Transport, "https://api.example.com", recovery.CauseTimeout, false,
				"The connection to https://api.example.com failed: timed out"},
			"Check the base URL and your network connection."},
		{"unknown certificate authority", "https://llm.corp.example/v1", errUnknownCA,
			facts{recovery.Transport, "https://llm.corp.example", recovery.CauseCertificate, true,
				"The connection to https://llm.corp.example failed: TLS certificate error"},
			"the server's certificate"},
		{"certificate for another host", "https://api.example.com/v1", errHostname,
			facts{recovery.Transport, "https://api.example.com", recovery.CauseCertificate, true,
				"The connection to https://api.example.com failed: TLS certificate error"},
			"check the host name in the base URL"},
		{"the endpoint keeps no credentials, path or query", "https://user:sk-very-secret@api.example.com:8443/v1?key=sk-very-secret", errRefused,
			facts{recovery.Transport, "https://api.example.com:8443", recovery.CauseRefused, false,
				"The connection to https://api.example.com:8443 failed: connection refused"},
			"https://api.example.com:8443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: tt.baseURL, APIKey: "sk-test-key", HTTPClient: failingDoer{tt.err}})
			_, err := p.Stream(t.Context(), hello)
			if err == nil {
				t.Fatal("Stream() succeeded")
			}
			f := recovery.Classify(err)
			got := facts{f.Code, f.Endpoint(), f.Cause(), f.Permanent(), f.Summary()}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Classify(%v) (-want +got):\n%s", err, diff)
			}
			if a := f.Advice("OPENAI_API_KEY"); !strings.Contains(a, tt.wantAdvice) {
				t.Errorf("Advice() = %q, want it to contain %q", a, tt.wantAdvice)
			}
			if strings.Contains(got.Summary+f.Advice(""), "sk-very-secret") {
				t.Errorf("Summary or Advice shows a credential: %q", got.Summary)
			}
		})
	}
}

// Without a URL (a stream cut mid-reply) the summary stays as it was.
func TestFailure_SummaryOfTransportWithoutEndpoint(t *testing.T) {
	f := recovery.Classify(errReset)
	if got, want := f.Summary(), "The connection to the provider failed: connection reset"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	f = recovery.Classify(llm.ErrIncompleteStream)
	if got, want := f.Summary(), "The connection to the provider failed"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

// A real TLS handshake against a server whose certificate the client does
// not trust: outside a bubble, since it dials a socket.
func TestClassify_UntrustedCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "sk-test-key", HTTPClient: &http.Client{}})
	_, err := p.Stream(t.Context(), hello)
	f := recovery.Classify(err)
	if f.Code != recovery.Transport || f.Cause() != recovery.CauseCertificate || !f.Permanent() || f.Endpoint() != srv.URL {
		t.Errorf("Classify(%v) = %s, cause %q, permanent %v, endpoint %q; want TRANSPORT, a permanent certificate error at %s",
			err, f.Code, f.Cause(), f.Permanent(), f.Endpoint(), srv.URL)
	}
}

// The executor tries a permanent cause once, with the default policy or a
// rule for its code; a cause that may heal is retried as before.
func TestExecutor_ConnectionFailures(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		rules    []recovery.Rule
		attempts int
		why      string
		message  string
	}{
		{name: "NXDOMAIN is tried once", err: errNXDOMAIN, attempts: 1, why: "not retryable",
			message: "The connection to https://api.example.invalid failed: DNS name not found: "},
		{name: "a certificate error is tried once", err: errUnknownCA, attempts: 1, why: "not retryable",
			message: "The connection to https://api.example.invalid failed: TLS certificate error: "},
		{name: "a rule for TRANSPORT does not retry NXDOMAIN", err: errNXDOMAIN, attempts: 1, why: "not retryable",
			rules:   []recovery.Rule{{Match: "TRANSPORT", Delay: time.Second, MaxRetries: 5}},
			message: "The connection to https://api.example.invalid failed: DNS name not found: "},
		{name: "a rule on the message still does", err: errNXDOMAIN, attempts: 3, why: "rule 1 (msg~no such host) allows no more retries",
			rules:   []recovery.Rule{{Match: "msg~no such host", Delay: time.Second, MaxRetries: 2}},
			message: "The connection to https://api.example.invalid failed: DNS name not found; rule 1 (msg~no such host) allows no more retries"},
		{name: "a refused connection is retried", err: errRefused, attempts: 3, why: "retries exhausted",
			message: "The connection to https://api.example.invalid failed: connection refused; gave up after 2 retries in 1.5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "https://api.example.invalid/v1", APIKey: "sk-test-key", HTTPClient: failingDoer{tt.err}})
				e := recovery.Executor{Config: recovery.Config{Policy: testPolicy, Rules: tt.rules}, Start: time.Now()}
				attempts := 0
				err := e.Do(t.Context(), recovery.Chain{}, newObserver(t), func(ctx context.Context) error {
					attempts++
					_, err := p.Stream(ctx, hello)
					return err
				})
				g, ok := recovery.AsGiveUp(err)
				if !ok {
					t.Fatalf("Do() = %v, want a *GiveUpError", err)
				}
				if attempts != tt.attempts || g.Why != tt.why || !strings.HasPrefix(g.Message(), tt.message) {
					t.Errorf("Do() after %d attempts: why %q, message %q; want %d attempts, why %q, message starting %q",
						attempts, g.Why, g.Message(), tt.attempts, tt.why, tt.message)
				}
				if !errors.Is(err, tt.err) {
					t.Errorf("Do() = %v, want the dial error kept in the chain", err)
				}
			})
		})
	}
}

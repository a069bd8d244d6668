package recovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// ErrEmptyResponse: the stream finished properly but carried neither content
// nor a tool call.
var ErrEmptyResponse = errors.New("the provider finished the reply without any content")

// WithFacts returns err carrying f, its classification: Classify of the
// result (or of an error wrapping it) is f, so a failure is classified once
// however many layers look at it. Its text is err's.
func WithFacts(f *Failure, err error) error {
	if f == nil || err == nil {
		return err
	}
	return &classified{f: f, err: err}
}

type classified struct {
	f   *Failure
	err error
}

func (c *classified) Error() string   { return c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.f, c.err} }

// Classify turns an attempt's error into failure facts. Structured facts
// come first (error identity, status), then the dialect table (codes and
// types, and phrases tied to them), then the word classes (wordclass.go) in the
// provider's own texts, where the first two leave the failure open. How it
// was recognised is recorded (Dialect, RecognisedBy).
func Classify(err error) *Failure {
	if err == nil {
		return nil
	}
	if f, ok := errors.AsType[*Failure](err); ok {
		return f
	}
	f := &Failure{Code: Unknown, Message: err.Error()}
	f.byIdentity(err)
	if pe, ok := errors.AsType[*llm.Error](err); ok {
		f.fromProvider(pe)
		return f
	}
	f.fromConnection(err)
	return f
}

// byIdentity sets f's code (and limit) from the sentinel errors err is.
func (f *Failure) byIdentity(err error) {
	switch {
	case errors.Is(err, context.Canceled):
		f.Code = Aborted
	case errors.Is(err, ErrFirstTokenTimeout):
		f.Code, f.Limit = Timeout, LimitFirstToken
	case errors.Is(err, ErrIdleTimeout):
		f.Code, f.Limit = Timeout, LimitIdle
	case errors.Is(err, ErrAttemptTimeout):
		f.Code, f.Limit = Timeout, LimitAttempt
	case errors.Is(err, context.DeadlineExceeded):
		f.Code = Timeout
	case errors.Is(err, llm.ErrMalformedStream):
		f.Code = Protocol
		// The summary says "malformed reply": the sentinel's own words
		// would say it twice.
		f.Message = strings.Replace(f.Message, llm.ErrMalformedStream.Error()+": ", "", 1)
	case errors.Is(err, ErrEmptyResponse):
		f.Code = EmptyResponse
	case errors.Is(err, llm.ErrIncompleteStream), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF):
		f.Code = Transport
	}
}

// fromProvider sets f's facts from the provider's answer pe: its status,
// code and texts decide the code, whatever the error's identity said.
func (f *Failure) fromProvider(pe *llm.Error) {
	now := time.Now()
	f.Status = statusOf(pe)
	f.RequestID = pe.RequestID
	f.ProviderCode = pe.Code
	f.ProviderType = pe.Type
	f.provider, f.page = true, pe.WebPage()
	up := upstreamOf(pe.Body)
	if pe.Message != "" {
		f.Message = withUpstream(pe.Message, up)
	}
	// In order: the status, then the dialect table, then the word
	// classes (wordclass.go); user rules come before all of them when a
	// policy decides (Executor.decide).
	d := dialectOf(pe)
	f.Code = classifyProvider(pe, d)
	if d != nil {
		f.Dialect, f.ContentFilter = d.ID, d.ContentFilter
	} else if !f.page {
		if code, filter, by := recognise(pe, f.Status, up, now); by != "" {
			f.Code, f.ContentFilter, f.RecognisedBy = code, filter, by
		}
	}
	f.body = pe.Body
	wait, source, err := retryHint(pe, f.Code, now)
	if source != "" {
		ms := wait.Milliseconds()
		f.RetryAfterMs, f.RetryAfterSource = &ms, source
	}
	f.retryAfterErr = err
}

// fromConnection sets f's facts for an error with no provider's answer:
// a connection that failed is a transport failure, with its cause and
// endpoint.
func (f *Failure) fromConnection(err error) {
	if re, ok := errors.AsType[*llm.RequestIDError](err); ok {
		f.RequestID = re.RequestID
	}
	cause := connCause(err)
	if f.Code == Unknown && isConnError(err, cause) {
		f.Code = Transport
	}
	if f.Code == Transport {
		f.cause = cause
		if ue, ok := errors.AsType[*url.Error](err); ok {
			f.endpoint = endpoint(ue.URL)
		}
	}
}

// isConnError reports whether err is a connection's failure: a net.Error,
// a *net.OpError, or any with a cause (a certificate error is no
// net.Error).
func isConnError(err error, cause Cause) bool {
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true
	}
	return cause != ""
}

// connCause reads why a connection failed from the error's identity.
func connCause(err error) Cause {
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		switch {
		case de.IsNotFound:
			return CauseDNSNotFound
		case de.IsTimeout:
			return CauseTimeout
		}
		return CauseDNS
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return CauseCertificate
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return CauseCertificate
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return CauseCertificate
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return CauseCertificate
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return CauseTLSHandshake // e.g. https:// to a port that speaks plain HTTP
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return CauseReset
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTDOWN):
		return CauseUnreachable
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, os.ErrDeadlineExceeded):
		return CauseTimeout
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return CauseTimeout
	}
	return ""
}

// endpoint reduces a request URL to scheme://host[:port]: enough to see a
// wrong base URL, and free of paths, queries and user info, where a key
// could travel.
func endpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// statusOf is the HTTP status of a provider's error: the response's, or
// the HTTP-like code an error inside the stream carries; 0 for an error
// inside a stream that carries none (the 2xx it came with is not its
// status).
func statusOf(e *llm.Error) int {
	if e.InStream && e.Status < 400 {
		return 0
	}
	return e.Status
}

// classifyProvider is the dialect's meaning when one matched, else what the
// status says.
func classifyProvider(e *llm.Error, d *Dialect) Code {
	if d != nil {
		return d.Means
	}
	switch s := statusOf(e); {
	case s == 0:
		if e.InStream {
			return Server // an in-stream error without a known code: the provider failed mid-reply
		}
		return Unknown
	case s == 401 || s == 403:
		return Auth
	case s == 402: // Payment Required: DeepSeek, OpenRouter and others when the balance is used up
		return Quota
	case s == 429:
		return RateLimit
	case s == 529:
		return Overloaded
	case s == 408:
		return Timeout
	case s >= 500:
		return Server
	case s >= 400:
		return InvalidRequest
	}
	return Unknown
}

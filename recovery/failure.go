// Package recovery owns what Rebound knows about provider failures: the
// failure taxonomy and its classification (from the HTTP status, the
// provider's error code and type, headers, our own watchdogs, the dialect
// table, and the word classes of wordclass.go for providers the table does not
// name), and the policies that decide whether and when to try again.
package recovery

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Code is the stable failure taxonomy shown to editors, logs and users.
type Code string

const (
	RateLimit       Code = "RATE_LIMIT"
	Overloaded      Code = "OVERLOADED"
	Server          Code = "SERVER"
	Timeout         Code = "TIMEOUT"
	Transport       Code = "TRANSPORT"
	EmptyResponse   Code = "EMPTY_RESPONSE"
	ContextOverflow Code = "CONTEXT_OVERFLOW"
	Auth            Code = "AUTH"
	Quota           Code = "QUOTA"
	InvalidRequest  Code = "INVALID_REQUEST"
	Protocol        Code = "PROTOCOL"
	Aborted         Code = "ABORTED"
	Unknown         Code = "UNKNOWN"
)

// Failure is the one JSON-serialisable description of a provider failure:
// the failure facts. Its exported fields are a wire contract and stay as
// they are, however many: the session log keeps them (step/end, turn/end),
// a failed prompt's JSON-RPC error carries them as data, and so does the
// retry progress in _meta["rebound/retry"] (schema/retry-progress.schema.json).
// Classify (classify.go) makes one; its methods here read it and put it in
// words, and ModelNotFound (modelmissing.go) reads a missing model in them.
type Failure struct {
	Code         Code   `json:"code" jsonschema:"enum=RATE_LIMIT,enum=OVERLOADED,enum=SERVER,enum=TIMEOUT,enum=TRANSPORT,enum=EMPTY_RESPONSE,enum=CONTEXT_OVERFLOW,enum=AUTH,enum=QUOTA,enum=INVALID_REQUEST,enum=PROTOCOL,enum=ABORTED,enum=UNKNOWN"`
	Message      string `json:"message"`
	Status       int    `json:"status,omitempty"`
	RetryAfterMs *int64 `json:"retryAfterMs,omitempty"`
	// RetryAfterSource is where the provider said how long to wait.
	RetryAfterSource string `json:"retryAfterSource,omitempty" jsonschema_description:"Where the provider said how long to wait: a header's name in lower case (retry-after, x-ratelimit-reset-tokens-minute, …), the path of a field of the error body (error.metadata.headers.X-RateLimit-Reset, …), or message."`
	RequestID        string `json:"requestId,omitempty"`
	ProviderCode     string `json:"providerCode,omitempty"`
	ProviderType     string `json:"providerType,omitempty"`
	// Dialect is the entry of the provider dialect table (recovery.Dialects,
	// listed in docs/providers.md) that gave Code its meaning, if one did.
	Dialect string `json:"dialect,omitempty"`
	// RecognisedBy is the word class that gave Code its meaning, and where
	// its words were: "code:overflow", "type:quota", "words:moderation" (the
	// message), "upstream:quota" (a gateway's forwarded upstream error).
	// Empty when the dialect table did (Dialect) or the status or the
	// error itself did, as before the word classes (see HowRecognised).
	RecognisedBy string `json:"recognisedBy,omitempty"`
	// ContentFilter: the provider's content filter refused the request. The
	// turn ends with stopReason "refusal", as it does for a filtered reply.
	ContentFilter bool `json:"contentFilter,omitempty"`
	// Limit is the configuration key of Rebound's own limit that ended the
	// attempt (a TIMEOUT without a status): which one to raise.
	Limit string `json:"limit,omitempty" jsonschema:"enum=recovery.first_token_timeout,enum=recovery.stream_idle_timeout,enum=recovery.attempt_timeout"`
	// Held: the wait is the shared rate limit's (a Gate's Hold), asked
	// before the request was sent, not the provider's answer to it.
	Held *Held `json:"held,omitempty" jsonschema_description:"the wait was asked by the provider's rate limit as every chat and Rebound process sending to it shares it, before the request was sent"`

	retryAfterErr error  // a Retry-After header that was present but unusable
	body          []byte // the provider's error JSON, for user rules' field=value
	provider      bool   // the provider answered with an error: Message is its words
	page          bool   // the answer was a web page, not the API's: Message is ours

	// Of a connection failure (TRANSPORT): where to, and why, when known.
	endpoint string // scheme://host[:port] of the request, never a path or credentials
	cause    Cause
}

// Held is who learnt the shared rate limit that holds a request, and how.
type Held struct {
	Reason string `json:"reason" jsonschema:"enum=cooldown,enum=pacing"`
	By     string `json:"by" jsonschema:"enum=self,enum=another chat,enum=another Rebound process"`
}

// Cause is why a connection to the provider failed, as far as the error's
// identity says (never its text).
type Cause string

const (
	CauseDNSNotFound  Cause = "DNS name not found"
	CauseDNS          Cause = "DNS lookup failed"
	CauseRefused      Cause = "connection refused"
	CauseReset        Cause = "connection reset"
	CauseTimeout      Cause = "timed out"
	CauseUnreachable  Cause = "host unreachable"
	CauseCertificate  Cause = "TLS certificate error"
	CauseTLSHandshake Cause = "TLS handshake failed"
)

// Permanent reports a cause that waiting cannot heal: a host name that does
// not exist (NXDOMAIN) and a certificate that does not verify stay so until
// someone changes the configuration, the DNS or the server.
func (c Cause) Permanent() bool { return c == CauseDNSNotFound || c == CauseCertificate }

// Endpoint is scheme://host of a connection failure's request ("" when not
// known); it never holds a path, a query or credentials.
func (f *Failure) Endpoint() string { return f.endpoint }

// Cause is why a connection failure happened, "" when not known.
func (f *Failure) Cause() Cause { return f.cause }

// Permanent reports a failure that a retry cannot heal whatever its code's
// usual nature: the transient policy gives up on it at once.
func (f *Failure) Permanent() bool { return f.Code == Transport && f.cause.Permanent() }

// RetryAfterErr reports a Retry-After header that was present but could not
// be used; the policy then falls back to its own backoff.
func (f *Failure) RetryAfterErr() error { return f.retryAfterErr }

func (f *Failure) Error() string { return f.Summary() + ": " + f.Message }

// FromProvider reports a failure the provider reported itself (an error
// body, an error inside the stream, a status): Message holds its words.
// Otherwise Message is what Rebound saw (a refused connection, a stream
// that ended early, a watchdog), and nobody "said" it.
func (f *Failure) FromProvider() bool {
	return (f.provider && !f.page) || f.Status != 0 || f.ProviderCode != "" || f.ProviderType != "" ||
		f.Dialect != "" || f.RecognisedBy != ""
}

// HowRecognised says what gave a failure its code, from the fields the
// facts record: "dialect:<id>", the word class ("words:overflow", …),
// "status" (the HTTP status alone), "in-stream" (an error event inside the
// stream, without a code that says more), or "" for a failure Rebound saw
// itself (its identity: a timeout, a refused connection, …). Rules do not
// change the code; a retry a rule decides is recorded as policy "rule:N".
func HowRecognised(dialect, recognisedBy string, status int, fromProvider bool) string {
	switch {
	case recognisedBy != "":
		return recognisedBy
	case dialect != "":
		return "dialect:" + dialect
	case status != 0:
		return "status"
	case fromProvider:
		return "in-stream"
	}
	return ""
}

// Summary is a short phrase a person can read, e.g. "Rate limited by the
// provider (429)".
func (f *Failure) Summary() string {
	status := ""
	if f.Status != 0 {
		status = " (" + strconv.Itoa(f.Status) + ")"
	}
	switch f.Code {
	case RateLimit:
		if f.Held != nil {
			return HeldSummary
		}
		return "Rate limited by the provider" + status
	case Overloaded:
		return "The provider is overloaded" + status
	case Server:
		return "The provider had a server error" + status
	case Timeout:
		switch f.Limit {
		case LimitFirstToken:
			return "The provider sent nothing within " + LimitFirstToken
		case LimitIdle:
			return "The provider's stream stalled for longer than " + LimitIdle
		case LimitAttempt:
			return "The request took longer than " + LimitAttempt
		}
		return "The provider did not answer in time" + status
	case Transport:
		switch to := f.endpoint; {
		case to != "" && f.cause != "":
			return "The connection to " + to + " failed: " + string(f.cause)
		case to != "":
			return "The connection to " + to + " failed"
		case f.cause != "":
			return "The connection to the provider failed: " + string(f.cause)
		}
		return "The connection to the provider failed"
	case EmptyResponse:
		return "The provider sent an empty reply"
	case ContextOverflow:
		return "The conversation is too long for the model" + status
	case Auth:
		return "The provider rejected the API key" + status
	case Quota:
		return "The provider account is out of quota" + status
	case InvalidRequest:
		if f.ContentFilter {
			return "The provider's content filter refused the request" + status
		}
		return "The provider rejected the request" + status
	case Protocol:
		return "The provider sent a malformed reply"
	case Aborted:
		return "The request was cancelled"
	}
	return "The provider request failed" + status
}

// pageAdvice is the advice for a web page where the API's answer was due.
const pageAdvice = "The base URL answers with a web page, not an API: point it at the provider's API (it usually ends in /v1)."

// Advice says what a person can do about the failure, or "" when there is
// nothing better than trying again later.
func (f *Failure) Advice(apiKeyEnv string) string {
	switch f.Status {
	case 400, 401, 403, 404, 405, 410:
		if f.page && f.Code != Quota {
			return pageAdvice // a sign-in page or a website: neither the key nor the model is the question
		}
	case 413:
		if f.Code == InvalidRequest {
			return "The request is too large for the server (or a proxy in front of it): shorten the prompt or attach less context."
		}
	}
	switch f.Code {
	case Auth:
		return fmt.Sprintf("Check the key in %s (or the one `rebound login` stored) and the base URL.", apiKeyEnv)
	case Quota:
		return "Add credit or raise the limit with the provider, or switch model."
	case ContextOverflow:
		return "Shorten the prompt or attach less context, or start a new session."
	case InvalidRequest:
		if f.ContentFilter {
			return "Rephrase the prompt, or leave out what the filter objected to."
		}
		return "Check the model name and the base URL."
	case Transport:
		host := "the base URL"
		if f.endpoint != "" {
			host = f.endpoint
		}
		switch f.cause {
		case CauseDNSNotFound:
			return "Check the host name in the base URL: " + host + " does not exist in DNS."
		case CauseDNS:
			return "Check the host name in the base URL (" + host + ") and your DNS."
		case CauseCertificate:
			return "The server's TLS certificate for " + host + " did not verify: check the host name in the base URL, the server's certificate, or add its CA to the system's trusted certificates (SSL_CERT_FILE)."
		case CauseTLSHandshake:
			return "Check the scheme of the base URL (" + host + "): the server may not speak TLS (use http://) or may need a different port."
		case CauseRefused:
			return "Nothing accepts connections at " + host + ": check the base URL's host and port, and that the server is running."
		}
		return "Check the base URL and your network connection."
	}
	return ""
}

// maxReason bounds the provider's reason in a give-up message: enough for
// any provider's sentence, short enough for a one-line error.
const maxReason = 300

// reason is ": " and the provider's message on one line, cut at maxReason
// runes, or "" when the provider sent none (a dropped connection, a
// timeout: the summary says it all). The message is already redacted.
func (f *Failure) reason() string {
	if !f.FromProvider() {
		return ""
	}
	msg := strings.Join(strings.Fields(f.Message), " ")
	if msg == "" {
		return ""
	}
	if r := []rune(msg); len(r) > maxReason {
		msg = string(r[:maxReason]) + "…"
	}
	return ": " + msg
}

// RetryAfterText says what the provider asked, and how: "the provider asked
// to wait 2 s (retry-after)" or "the provider says the limit resets in 37 s
// (x-ratelimit-reset-tokens)"; "" when it did not say.
func (f *Failure) RetryAfterText() string {
	if f.RetryAfterMs == nil {
		return ""
	}
	d := time.Duration(*f.RetryAfterMs) * time.Millisecond
	if asked(f.RetryAfterSource) {
		return "the provider asked to wait " + waitText(d) + " (" + cmp.Or(f.RetryAfterSource, SourceRetryAfter) + ")"
	}
	return "the provider says the limit resets in " + waitText(d) + " (" + f.RetryAfterSource + ")"
}

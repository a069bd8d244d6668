package acp

import (
	"net/http"
	"net/url"
	"strings"
)

// What is advertised of providers/* (unstable.go) and the checks of
// providers/set; the handlers are in dispatch.go.

// providersCapability advertises providers/* when agent serves them.
func providersCapability(agent Agent) *struct{} {
	if p, ok := agent.(ProviderConfigurer); ok && p.ProvidersConfigurable() {
		return &struct{}{}
	}
	return nil
}

// Bounds of a providers/set: the headers go on every model request.
const (
	maxProviderHeaders     = 64
	maxProviderHeaderBytes = 8 << 10
	maxProviderURLBytes    = 2 << 10
)

// checkSetProvider checks what the client routes the model's traffic
// through: an absolute http(s) URL without credentials, query or fragment
// in it, and headers
// net/http would send as they are.
func checkSetProvider(p *SetProviderRequest) error {
	switch {
	case p.ProviderID == "":
		return NewInvalidParams("providerId is required")
	case p.APIType == "":
		return NewInvalidParams("apiType is required")
	case len(p.BaseURL) > maxProviderURLBytes:
		return NewInvalidParams("baseUrl is longer than %d bytes", maxProviderURLBytes)
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return NewInvalidParams("baseUrl must be an absolute http or https URL, got %s", quote(p.BaseURL))
	}
	if u.User != nil {
		return NewInvalidParams("baseUrl must not hold credentials; send them in headers")
	}
	// Each endpoint's path is appended to the base URL: after a query or
	// fragment it would not be the path (and a key in a query would be
	// logged with the URL).
	if strings.ContainsAny(p.BaseURL, "?#") {
		return NewInvalidParams("baseUrl must not have a query or fragment; send credentials in headers")
	}
	if len(p.Headers) > maxProviderHeaders {
		return NewInvalidParams("at most %d headers", maxProviderHeaders)
	}
	named := make(map[string]string, len(p.Headers))
	for k, v := range p.Headers {
		if err := checkHeader(k, v); err != nil {
			return err
		}
		// Names that differ in case are one header: which value went
		// would be a draw of the map's order.
		c := http.CanonicalHeaderKey(k)
		if other, ok := named[c]; ok {
			return NewInvalidParams("headers %s and %s are the same header", quote(min(k, other)), quote(max(k, other)))
		}
		named[c] = k
	}
	return nil
}

func checkHeader(k, v string) error {
	if len(k)+len(v) > maxProviderHeaderBytes {
		return NewInvalidParams("header %s is longer than %d bytes", quote(k), maxProviderHeaderBytes)
	}
	if k == "" || strings.ContainsFunc(k, func(r rune) bool { return !isTokenRune(r) }) {
		return NewInvalidParams("header name %s is not a valid HTTP header name", quote(k))
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		// The value itself is never quoted: it may be a key.
		return NewInvalidParams("header %s: the value holds a control character", quote(k))
	}
	switch http.CanonicalHeaderKey(k) {
	case "Host", "Content-Length", "Transfer-Encoding", "Connection":
		return NewInvalidParams("header %s is set by Rebound's HTTP client", quote(k))
	}
	return nil
}

// isTokenRune reports whether r may appear in an HTTP header name (RFC 9110
// token).
func isTokenRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

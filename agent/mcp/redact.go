package mcp

import (
	"cmp"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// redacted stands in for what was removed.
const redacted = "REDACTED"

// redactor removes from text about a server what its spec may hold in
// secret: the values of URL queries, the userinfo and fragment of URLs (a
// token often rides in ?token= or in user:token@), and the spec's header
// values, which the editor gave for the server alone. Scheme, host and path
// stay, so that a message still says which server failed and where.
//
// Every error and log line the package writes about a server goes through
// it: the errors reach the editor's notices, the model and stderr.
type redactor struct {
	literal []string // longest first, so a value is replaced before a part of it
}

// minLiteral is the shortest value replaced wherever it occurs: a shorter
// one ("?v=1") would blot out ordinary text, and is still redacted inside
// URLs.
const minLiteral = 8

func newRedactor(sp Spec) redactor {
	var lit []string
	add := func(v string) {
		if len(v) >= minLiteral && !slices.Contains(lit, v) {
			lit = append(lit, v)
		}
	}
	for _, h := range sp.Headers {
		add(h.Value)
		for _, f := range strings.Fields(h.Value) { // "Bearer <token>": the token alone
			add(f)
		}
	}
	if u, err := url.Parse(sp.URL); err == nil {
		if u.User != nil {
			add(u.User.Username())
			p, _ := u.User.Password()
			add(p)
		}
		add(u.RawQuery)
		add(u.Fragment)
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
				add(url.QueryEscape(v))
			}
		}
	}
	slices.SortFunc(lit, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return redactor{literal: lit}
}

// urlPattern finds URLs in text, up to a quote, a space or an angle bracket
// (errors quote URLs with %q).
var urlPattern = regexp.MustCompile("[a-zA-Z][a-zA-Z0-9+.-]*://[^\\s\"'<>`]+")

// redact returns s with secrets replaced.
func (r redactor) redact(s string) string {
	s = urlPattern.ReplaceAllStringFunc(s, redactURL)
	for _, v := range r.literal {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}

// redactURL keeps a URL's scheme, host and path, and the names of its query
// parameters; userinfo, query values and the fragment are replaced. It works
// on the text, not url.Parse, so that a URL the parser refuses is redacted
// too.
func redactURL(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host, tail := rest[:end], rest[end:]
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = redacted + "@" + host[i+1:]
	}
	tail, fragment, hasFragment := strings.Cut(tail, "#")
	path, query, hasQuery := strings.Cut(tail, "?")

	var b strings.Builder
	b.WriteString(scheme + "://" + host + path)
	if hasQuery {
		b.WriteByte('?')
		for i, item := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			switch name, value, ok := strings.Cut(item, "="); {
			case ok && value == "":
				b.WriteString(name + "=")
			case ok:
				b.WriteString(name + "=" + redacted)
			case item != "":
				b.WriteString(redacted) // a bare value: ?<token>
			}
		}
	}
	if hasFragment && fragment != "" {
		b.WriteString("#" + redacted)
	}
	return b.String()
}

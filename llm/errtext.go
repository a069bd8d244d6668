package llm

// What recovery reads of a provider's error beyond its fields: a gateway's
// forwarded upstream body, and whether the answer was a web page.

// ParseErrorBody reads an error object in any of the shapes providers use
// (see parseErrorFacts): its code, type and message, and whether it was
// one. A gateway forwards the upstream's body as text inside its own
// (OpenRouter's error.metadata.raw); recovery reads that with this.
func ParseErrorBody(b []byte) (code, typ, message string, ok bool) {
	f, ok := parseErrorFacts(b)
	return f.Code, f.Type, f.Message, ok
}

// WebPage reports whether the provider's answer was a web page (HTML) and
// not the API's error: a base URL that points at a website, or a proxy's
// own page. Its message is then Rebound's, naming the page, not the
// provider's words.
func (e *Error) WebPage() bool {
	if e == nil || len(e.Body) == 0 {
		return false
	}
	if _, ok := parseErrorFacts(e.Body); ok {
		return false
	}
	_, ok := webPage(e.Header, e.Body)
	return ok
}

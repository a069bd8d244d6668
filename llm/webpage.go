package llm

import (
	"bytes"
	"fmt"
	"html"
	"mime"
	"net/http"
	"strings"
)

// A base URL that points at a website, or through a proxy that wants a
// sign-in, gets a web page where the API's answer was due. The page itself
// (kilobytes of markup) says nothing a person can act on; that it is a page,
// from which host, and what to check, does.

// maxPageTitle bounds the page title quoted in an error.
const maxPageTitle = 80

// webPage reports whether a response is an HTML page, by its Content-Type
// or, since servers mislabel pages, by its first bytes, and returns the
// page's title ("" if it has none).
func webPage(header http.Header, body []byte) (title string, ok bool) {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if mt != "text/html" && mt != "application/xhtml+xml" && !strings.HasPrefix(http.DetectContentType(body), "text/html") {
		return "", false
	}
	lower := bytes.ToLower(body)
	start := bytes.Index(lower, []byte("<title"))
	if start < 0 {
		return "", true
	}
	open := bytes.IndexByte(lower[start:], '>')
	if open < 0 {
		return "", true
	}
	rest := body[start+open+1:]
	if end := bytes.Index(bytes.ToLower(rest), []byte("</title")); end >= 0 {
		rest = rest[:end]
	}
	title = strings.Join(strings.Fields(html.UnescapeString(string(rest))), " ")
	if r := []rune(title); len(r) > maxPageTitle {
		title = string(r[:maxPageTitle-1]) + "…"
	}
	return title, true
}

// pageMessage says that the server answered with a web page, not the API.
// A 5xx page is a proxy's or gateway's own error in front of an API that is
// probably right, so only the others point at the base URL.
func (o *OpenAI) pageMessage(status int, header http.Header, body []byte) (string, bool) {
	title, ok := webPage(header, o.redact.bytes(body))
	if !ok {
		return "", false
	}
	page := "a web page"
	if title != "" {
		page = fmt.Sprintf("a web page (%q)", title)
	}
	if status >= 500 {
		return fmt.Sprintf("%s answered with %s instead of the API's error", o.host, page), true
	}
	return fmt.Sprintf("%s answered with %s, not the API: check the base URL (provider.base_url, OPENAI_BASE_URL or --base-url)", o.host, page), true
}

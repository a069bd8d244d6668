// Package markdown tells, for tests, what a piece of markdown renders to in
// an editor that renders it (CommonMark, with GFM's tables and
// strikethrough), so a test can check that text meant to be inert is.
// Only tests import it: goldmark is not linked into Rebound.
package markdown

import (
	"bytes"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	gtext "github.com/yuin/goldmark/text"
)

// Rendered returns the kinds of node s renders to beyond paragraphs of
// text (a code span counts as text: it is inert), and the text shown,
// escapes and entities resolved.
func Rendered(s string) (markup []string, shown string) {
	md := goldmark.New(goldmark.WithExtensions(extension.Strikethrough, extension.Table))
	src := []byte(s)
	doc := md.Parser().Parse(gtext.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n.Kind() {
		case ast.KindDocument, ast.KindParagraph, ast.KindText, ast.KindString, ast.KindCodeSpan:
		default:
			if entering {
				markup = append(markup, n.Kind().String())
			}
		}
		return ast.WalkContinue, nil
	})
	var out bytes.Buffer
	_ = md.Renderer().Render(&out, src, doc)
	plain := strings.NewReplacer("<p>", " ", "</p>", " ", "<br>", " ", "<br />", " ", "<code>", "", "</code>", "").Replace(out.String())
	return markup, html.UnescapeString(plain)
}

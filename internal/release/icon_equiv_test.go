package release

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkIconBefore is CheckIcon as it was before it was split into named
// steps, kept while the refactor is checked against it.
func checkIconBefore(data []byte) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if bytes.Contains(data, []byte("<!--")) {
		fail("icon.svg has comments, which break the registry's MDX embedding: remove them")
	}

	d := xml.NewDecoder(bytes.NewReader(data))
	var (
		root        *xml.StartElement
		depth       int
		inStyle     bool
		usesCurrent bool
	)
	// paint checks one fill or stroke value; what says where it is.
	paint := func(value string, what func(string) string) {
		v := strings.TrimSpace(value)
		switch l := strings.ToLower(v); {
		case l == "currentcolor":
			usesCurrent = true
		case !allowedPaint[l]:
			fail("icon.svg has a hardcoded colour, %s: use currentColor or none", what(v))
		}
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return append(errs, fmt.Errorf("icon.svg is not valid SVG/XML: %w", err))
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 && root != nil {
				return append(errs, errors.New("icon.svg is not valid SVG/XML: more than one root element"))
			}
			depth++
			if root == nil {
				e := t.Copy()
				root = &e
			}
			inStyle = t.Name.Local == "style"
			for _, a := range t.Attr {
				switch a.Name.Local {
				case "fill", "stroke":
					paint(a.Value, func(v string) string { return fmt.Sprintf("%s=%q", a.Name.Local, v) })
				case "style":
					for _, decl := range strings.Split(a.Value, ";") {
						name, value, ok := strings.Cut(decl, ":")
						if n := strings.ToLower(strings.TrimSpace(name)); ok && (n == "fill" || n == "stroke") {
							paint(value, func(v string) string { return fmt.Sprintf("style=\"%s: %s\"", n, v) })
						}
					}
				}
			}
		case xml.CharData:
			if inStyle {
				for _, m := range cssPaint.FindAllStringSubmatch(string(t), -1) {
					paint(m[2], func(v string) string { return fmt.Sprintf("CSS %s: %s", strings.ToLower(m[1]), v) })
				}
			}
		case xml.EndElement:
			depth--
			inStyle = false
		}
	}
	switch {
	case root == nil:
		return append(errs, errors.New("icon.svg has no <svg> element"))
	case root.Name.Local != "svg":
		return append(errs, fmt.Errorf("icon.svg's root element must be <svg>, not <%s>", root.Name.Local))
	}

	w, h, ok := iconSize(*root)
	switch {
	case !ok:
		fail("icon.svg has neither width and height nor a viewBox")
	default:
		if w != h {
			fail("icon.svg must be square, not %gx%g", w, h)
		}
		if w != IconSize || h != IconSize {
			fail("icon.svg must be %dx%d, not %gx%g", IconSize, IconSize, w, h)
		}
	}
	if !usesCurrent {
		fail("icon.svg must use currentColor for its fills or strokes, so that it follows the editor's theme")
	}
	return errs
}

// genIcon makes an SVG-like document: a root of several names with
// sizes and paint as attributes and in style, children with paint, style
// elements, comments, titles, a second root, text, and broken markup.
func genIcon(r *rand.Rand) string {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	attrs := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteString(pick(` width="16"`, ` height="16"`, ` width="16px"`, ` height="24"`, ` width="x"`, ` viewBox="0 0 16 16"`,
				` viewBox="0 0 24 16"`, ` viewBox="0 0 a 16"`, ` fill="currentColor"`, ` fill="red"`, ` stroke=" None "`,
				` fill="inherit"`, ` style="fill: #000; stroke:currentColor"`, ` style="FILL : CurrentColor"`, ` style="fill"`, ` stroke="#fff"`))
		}
		return b.String()
	}
	var b strings.Builder
	b.WriteString(pick("", `<?xml version="1.0"?>`, "<!-- c -->"))
	root := pick("svg", "svg", "svg", "g", "SVG")
	b.WriteString("<" + root + attrs() + ">")
	for range r.IntN(5) {
		switch r.IntN(8) {
		case 0:
			b.WriteString("<path" + attrs() + "/>")
		case 1:
			b.WriteString("<g" + attrs() + "><path" + attrs() + "/></g>")
		case 2:
			b.WriteString(pick(`<style>.a{fill:red} .b { Stroke : currentColor }</style>`, `<style>.a{fill:none;STROKE:#00f}</style>`, `<style></style>`))
		case 3:
			b.WriteString(pick("<title>currentColor</title>", "text", "<!-- x -->"))
		case 4:
			b.WriteString(pick("<", "</g>", "<a>", "&bad;"))
		default:
			b.WriteString("<rect" + attrs() + "/>")
		}
	}
	b.WriteString("</" + root + ">")
	b.WriteString(pick("", "", "<svg/>", " ", "<x>"))
	return b.String()
}

// CheckIcon finds what it did before its refactor in generated documents.
func TestCheckIcon_SameAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 8))
	for range 30000 {
		doc := []byte(genIcon(r))
		if got, want := fmt.Sprint(CheckIcon(doc)), fmt.Sprint(checkIconBefore(doc)); got != want {
			t.Fatalf("CheckIcon(%q) = %s; before %s", doc, got, want)
		}
	}
}

var (
	_ = bytes.Contains
	_ = errors.New
	_ io.Reader
	_ xml.Token
)

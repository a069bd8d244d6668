package release

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// IconSize is the width and height the registry wants, in user units.
const IconSize = 16

// allowedPaint are the only fill and stroke values a monochrome icon may
// use: the theme's colour through currentColor, or none.
var allowedPaint = map[string]bool{"currentcolor": true, "none": true, "inherit": true}

var (
	cssPaint = regexp.MustCompile(`(?i)\b(fill|stroke)\s*:\s*([^;}\s]+)`)
	unitTail = regexp.MustCompile(`(?i)[a-z%]+$`)
)

// CheckIcon applies the registry's rules for icon.svg
// (build_registry.py's validate_icon): no comments (they break the MDX its
// docs embed icons in), well-formed XML with an <svg> root, square and
// 16×16 by width and height or else the viewBox, and monochrome: every
// fill and stroke, as attributes, in style attributes or in <style>, is
// currentColor, none or inherit, and currentColor is used somewhere.
func CheckIcon(data []byte) []error {
	var c iconCheck
	if bytes.Contains(data, []byte("<!--")) {
		c.fail("icon.svg has comments, which break the registry's MDX embedding: remove them")
	}
	root, err := c.read(data)
	if err != nil {
		return append(c.errs, err)
	}
	w, h, ok := iconSize(root)
	switch {
	case !ok:
		c.fail("icon.svg has neither width and height nor a viewBox")
	default:
		if w != h {
			c.fail("icon.svg must be square, not %gx%g", w, h)
		}
		if w != IconSize || h != IconSize {
			c.fail("icon.svg must be %dx%d, not %gx%g", IconSize, IconSize, w, h)
		}
	}
	if !c.usesCurrent {
		c.fail("icon.svg must use currentColor for its fills or strokes, so that it follows the editor's theme")
	}
	return c.errs
}

// iconCheck is what CheckIcon has found so far.
type iconCheck struct {
	errs        []error
	usesCurrent bool
}

func (c *iconCheck) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// read reads the document, checking the paint of every element, and
// returns its root, which must be an <svg>; the error is what makes it
// no SVG.
func (c *iconCheck) read(data []byte) (xml.StartElement, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var root *xml.StartElement
	depth, inStyle := 0, false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return xml.StartElement{}, fmt.Errorf("icon.svg is not valid SVG/XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 && root != nil {
				return xml.StartElement{}, errors.New("icon.svg is not valid SVG/XML: more than one root element")
			}
			depth++
			if root == nil {
				e := t.Copy()
				root = &e
			}
			inStyle = t.Name.Local == "style"
			c.attrs(t.Attr)
		case xml.CharData:
			if inStyle {
				c.css(string(t))
			}
		case xml.EndElement:
			depth--
			inStyle = false
		}
	}
	switch {
	case root == nil:
		return xml.StartElement{}, errors.New("icon.svg has no <svg> element")
	case root.Name.Local != "svg":
		return xml.StartElement{}, fmt.Errorf("icon.svg's root element must be <svg>, not <%s>", root.Name.Local)
	}
	return *root, nil
}

// attrs checks the paint of an element's attributes: fill, stroke and
// the declarations of style.
func (c *iconCheck) attrs(attrs []xml.Attr) {
	for _, a := range attrs {
		switch a.Name.Local {
		case "fill", "stroke":
			c.paint(a.Value, func(v string) string { return fmt.Sprintf("%s=%q", a.Name.Local, v) })
		case "style":
			for _, decl := range strings.Split(a.Value, ";") {
				name, value, ok := strings.Cut(decl, ":")
				if n := strings.ToLower(strings.TrimSpace(name)); ok && (n == "fill" || n == "stroke") {
					c.paint(value, func(v string) string { return fmt.Sprintf("style=\"%s: %s\"", n, v) })
				}
			}
		}
	}
}

// css checks the paint a <style> element's text sets.
func (c *iconCheck) css(text string) {
	for _, m := range cssPaint.FindAllStringSubmatch(text, -1) {
		c.paint(m[2], func(v string) string { return fmt.Sprintf("CSS %s: %s", strings.ToLower(m[1]), v) })
	}
}

// paint checks one fill or stroke value; what says where it is.
func (c *iconCheck) paint(value string, what func(string) string) {
	v := strings.TrimSpace(value)
	switch l := strings.ToLower(v); {
	case l == "currentcolor":
		c.usesCurrent = true
	case !allowedPaint[l]:
		c.fail("icon.svg has a hardcoded colour, %s: use currentColor or none", what(v))
	}
}

// iconSize is the root's width and height (units such as px dropped), else
// its viewBox's.
func iconSize(svg xml.StartElement) (w, h float64, ok bool) {
	attr := func(name string) string {
		for _, a := range svg.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	num := func(s string) (float64, error) {
		return strconv.ParseFloat(unitTail.ReplaceAllString(strings.TrimSpace(s), ""), 64)
	}
	if ws, hs := attr("width"), attr("height"); ws != "" && hs != "" {
		w, errW := num(ws)
		h, errH := num(hs)
		if errW == nil && errH == nil {
			return w, h, true
		}
	}
	if f := strings.Fields(attr("viewBox")); len(f) == 4 {
		w, errW := strconv.ParseFloat(f[2], 64)
		h, errH := strconv.ParseFloat(f[3], 64)
		if errW == nil && errH == nil {
			return w, h, true
		}
	}
	return 0, 0, false
}

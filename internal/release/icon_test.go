package release_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/release"
)

// The cases of the registry's own tests of validate_icon
// (.github/workflows/tests/test_build_registry.py), plus the repository's
// icon.svg.
func TestCheckIcon(t *testing.T) {
	const ns = `xmlns="http://www.w3.org/2000/svg"`
	sized := func(inner string) string {
		return `<svg ` + ns + ` width="16" height="16">` + inner + `</svg>`
	}
	for _, tc := range []struct {
		name, svg string
		want      string // a part of one of the errors expected; "" for none
	}{
		{"fill currentColor", sized(`<path fill="currentColor" d="M0 0h16v16H0z"/>`), ""},
		{"stroke currentColor", sized(`<line stroke="currentColor" x1="0" y1="0" x2="16" y2="16"/>`), ""},
		{"fill on the root", `<svg ` + ns + ` width="16" height="16" fill="currentColor"><path d="M0 0z"/></svg>`, ""},
		{"fill none, stroke currentColor", sized(`<circle fill="none" stroke="currentColor" cx="8" cy="8" r="7"/>`), ""},
		{"inherit", `<svg ` + ns + ` width="16" height="16" fill="currentColor"><g fill="inherit"><path d="M0 0z"/></g></svg>`, ""},
		{"style currentColor", sized(`<path style="fill: currentColor" d="M0 0z"/>`), ""},
		{"style element currentColor", sized(`<style>.a { fill: currentColor; }</style><path class="a" d="M0 0z"/>`), ""},
		{"viewBox only", `<svg ` + ns + ` viewBox="0 0 16 16"><path fill="currentColor" d="M0 0z"/></svg>`, ""},
		{"px units", `<svg ` + ns + ` width="16px" height="16px"><path fill="currentColor" d="M0 0z"/></svg>`, ""},
		{"hex fill", sized(`<path fill="#FF0000" d="M0 0z"/><path fill="currentColor" d="M0 0z"/>`), `fill="#FF0000"`},
		{"named fill", sized(`<rect fill="red" stroke="currentColor" width="16" height="16"/>`), `fill="red"`},
		{"hardcoded stroke", sized(`<line stroke="#000" fill="currentColor" x1="0" y1="0" x2="16" y2="16"/>`), `stroke="#000"`},
		{"style fill", sized(`<path style="fill: #123456" stroke="currentColor" d="M0 0z"/>`), `style="fill: #123456"`},
		{"style element fill", sized(`<style>.a { fill: #FF0000; stroke: currentColor }</style><path class="a" d="M0 0z"/>`), `CSS fill: #FF0000`},
		{"no paint at all", sized(`<path d="M0 0h16v16H0z"/>`), "must use currentColor"},
		// currentColor only as text is not a use of it.
		{"currentColor in a title", sized(`<title>currentColor</title><path d="M0 0z"/>`), "must use currentColor"},
		{"not square", `<svg ` + ns + ` width="16" height="32"><path fill="currentColor" d="M0 0z"/></svg>`, "square"},
		{"too big", `<svg ` + ns + ` width="24" height="24"><path fill="currentColor" d="M0 0z"/></svg>`, "must be 16x16, not 24x24"},
		{"no size", `<svg ` + ns + `><path fill="currentColor" d="M0 0z"/></svg>`, "neither width and height nor a viewBox"},
		{"comment", sized(`<!-- a comment --><path fill="currentColor" d="M0 0z"/>`), "comments"},
		{"not closed", `<not-closed>`, "not valid SVG/XML"},
		{"two roots", sized(`<path fill="currentColor" d="M0 0z"/>`) + `<svg/>`, "more than one root"},
		{"not svg", `<div>hello</div>`, "root element must be <svg>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := release.CheckIcon([]byte(tc.svg))
			if tc.want == "" {
				for _, err := range errs {
					t.Errorf("unexpected: %v", err)
				}
				return
			}
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Errorf("errors = %v, want one containing %q", errs, tc.want)
		})
	}
}

func TestCheckIcon_Repository(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range release.CheckIcon(data) {
		t.Errorf("icon.svg: %v", err)
	}
}

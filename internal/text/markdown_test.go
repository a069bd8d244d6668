package text

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"

	"github.com/rebound-agent/rebound/internal/testkit/markdown"
)

// rendered is what s renders to beyond paragraphs of text, and the words
// shown.
func rendered(s string) (markup []string, words []string) {
	markup, shown := markdown.Rendered(s)
	return markup, strings.Fields(shown)
}

// Property: whatever markdown s holds, InertMarkdown(s) renders as
// paragraphs of text and code spans only (no link, image, autolink, HTML,
// entity, emphasis, heading, list, quote, rule, code block or table),
// showing s's words as
// InertLine shows them; its lines are s's; and a plain sentence is left as
// it is.
func TestInertMarkdown(t *testing.T) {
	pieces := []string{"word", " ", "\n", "\n\n", "\t", "rate_limit_exceeded", "[link](http://x)", "![img](http://x/y.png)", "<http://x>",
		"<img src=x>", "<!-- c -->", "&#x202e;", "&amp;", "&", "`", "```", "~~~", "*", "**", "_", "__", "#", "# ", "-", "- ", "+ ", "=", "---",
		"1. ", "2)", "12", ".", ")", ">", "> ", "|", "|-|", ":", "\\", "[", "]", "(", ")", "!", "[ref]: http://x", "    ", "é", "\x1b[31m",
		"\u202e", "\x00", "\r\n", "\u00a0", "~~s~~", "https://x.y/z"}
	r := rand.New(rand.NewPCG(7, 3))
	for range 5000 {
		var b strings.Builder
		for range r.IntN(16) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		got := InertMarkdown(s)
		markup, words := rendered(got)
		if len(markup) > 0 {
			t.Fatalf("InertMarkdown(%q) = %q renders as %v", s, got, markup)
		}
		// The words shown are s's, but for the backticks around a code
		// span (and the spaces a span trims).
		bare := strings.NewReplacer("`", "", " ", "").Replace
		if want := strings.Fields(InertLine(s, len(s)*4+1)); bare(strings.Join(words, " ")) != bare(strings.Join(want, " ")) {
			t.Fatalf("InertMarkdown(%q) = %q shows %q, want %q", s, got, words, want)
		}
		if strings.Count(got, "\n") != strings.Count(s, "\n") || strings.ContainsFunc(got, func(c rune) bool {
			return c != '\n' && unicode.IsControl(c) || unicode.Is(unicode.Cf, c)
		}) {
			t.Fatalf("InertMarkdown(%q) = %q: not the same lines, inert", s, got)
		}
	}
	for _, plain := range []string{"Rate limited by the provider (429), retry 1 of 2 in 8.0s",
		"The provider said: Invalid value for 'temperature'. Check the model name and the base URL.",
		"rate_limit_exceeded: 91% of the model's context; see https://x.y/z?a=b (request req_1)",
		"Type `/retry wait` to wait for it; `<` and `[x](y)` are quoted"} {
		if got := InertMarkdown(plain); got != plain {
			t.Errorf("InertMarkdown(%q) = %q, want it unchanged", plain, got)
		}
	}
}

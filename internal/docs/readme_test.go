package docs

import (
	"bytes"
	"fmt"
	"html"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

const (
	readme      = "../../README.md"
	trialAllSh  = "../../scripts/editor-trial/all.sh"
	trialCheck  = "../../scripts/editor-trial/check.py"
	readmeLabel = "README.md"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parse renders src as GitHub does, with GFM. Heading IDs are left to slug:
// goldmark's parser.WithAutoHeadingID slugs the raw source line (a link's URL
// included), turns '_' into '-' and drops every non-ASCII letter, where
// GitHub slugs the rendered text and keeps both.
func parse(src []byte) ast.Node {
	return goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
}

// slug is GitHub's anchor for a heading's text (html-pipeline's TOC filter):
// lower-case, drop every character that is not a letter, mark, decimal or
// letter number, connector punctuation ('_'), '-' or ' ', then each space
// becomes '-'.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-', unicode.In(r, unicode.L, unicode.M, unicode.Nd, unicode.Nl, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plainText is n's text as rendered, without Markdown syntax or HTML tags,
// which is what GitHub slugs.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			v := string(c.Value(src))
			if _, code := c.Parent().(*ast.CodeSpan); !code {
				v = html.UnescapeString(v) // &amp; is "&", which the slug drops
			}
			b.WriteString(v)
			if c.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.Label(src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

func lineAt(src []byte, offset int) int {
	return 1 + bytes.Count(src[:offset], []byte("\n"))
}

// lineOf is the line n starts on, from its first text or, for a block, its
// first line; 0 if neither is known.
func lineOf(n ast.Node, src []byte) int {
	line := 0
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			line = lineAt(src, t.Segment.Start)
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	for p := n; line == 0 && p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			line = lineAt(src, p.Lines().At(0).Start)
		}
	}
	return line
}

// anchors are the fragment IDs the headings of doc make on GitHub; a repeated
// slug gets -1, -2, ... in order.
func anchors(doc ast.Node, src []byte) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := n.(*ast.Heading); ok && entering {
			id := slug(plainText(h, src))
			if k := seen[id]; k > 0 {
				seen[id]++
				id += "-" + strconv.Itoa(k)
			} else {
				seen[id] = 1
			}
			ids[id] = true
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return ids
}

// brokenAnchors reports every link to #fragment in the same document that no
// heading makes: GitHub then scrolls nowhere.
func brokenAnchors(name string, src []byte) []string {
	doc := parse(src)
	ids := anchors(doc, src)
	var out []string
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		l, ok := n.(*ast.Link)
		if !ok || !entering || !bytes.HasPrefix(l.Destination, []byte("#")) || len(l.Destination) == 1 {
			return ast.WalkContinue, nil
		}
		frag, err := url.PathUnescape(string(l.Destination[1:]))
		if err != nil {
			frag = string(l.Destination[1:])
		}
		if !ids[frag] {
			out = append(out, fmt.Sprintf("%s:%d: link %q to #%s: no heading makes that anchor%s",
				name, lineOf(l, src), plainText(l, src), frag, nearest(frag, ids)))
		}
		return ast.WalkContinue, nil
	})
	return out
}

// nearest suggests the anchor a renamed heading probably has now.
func nearest(frag string, ids map[string]bool) string {
	var best []string
	for id := range ids {
		if strings.Contains(id, frag) || strings.Contains(frag, id) {
			best = append(best, id)
		}
	}
	if len(best) == 0 {
		return ""
	}
	slices.Sort(best)
	return " (did you mean #" + strings.Join(best, " or #") + "?)"
}

func rowLike(line string) bool {
	line = strings.TrimSpace(line)
	return len(line) >= 2 && strings.HasPrefix(line, "|") && strings.HasSuffix(line, "|")
}

// brokenTables reports paragraphs whose lines look like table rows: rows that
// GFM did not take into a table (a blank line inside the table, or no
// |---| delimiter row), which GitHub shows as a run of pipes.
func brokenTables(name string, src []byte) []string {
	var out []string
	ast.Walk(parse(src), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		// A tight list item's text is a TextBlock, not a Paragraph.
		if !entering || (n.Kind() != ast.KindParagraph && n.Kind() != ast.KindTextBlock) {
			return ast.WalkContinue, nil
		}
		lines := n.Lines()
		// A run of rows inside a paragraph, or a paragraph of nothing but
		// one (a last row cut off by a blank line).
		for i := 0; i < lines.Len(); {
			j := i
			for j < lines.Len() {
				seg := lines.At(j)
				if !rowLike(string(seg.Value(src))) {
					break
				}
				j++
			}
			if n := j - i; n >= 2 || (n == 1 && lines.Len() == 1) {
				out = append(out, fmt.Sprintf("%s:%d: %d line(s) that look like table rows render as a paragraph, not a table: "+
					"a blank line inside the table, or a missing |---| delimiter row after its header?",
					name, lineAt(src, lines.At(i).Start), n))
			}
			i = max(j, i+1)
		}
		return ast.WalkSkipChildren, nil
	})
	return out
}

var (
	// one NAME ...: a case in all.sh, maybe after VAR=value assignments.
	trialOne = regexp.MustCompile(`^\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*one\s+([A-Za-z0-9_-]+)(?:\s|$)`)
	// def case_NAME(r): its checks in check.py, case_mcp_dead for mcp-dead.
	trialCheckFn = regexp.MustCompile(`(?m)^def case_(\w+)\(`)
	// N cases, the count the README states, maybe broken over lines.
	statedCases = regexp.MustCompile(`\b(\d+)\s+cases\b`)
)

// trialCases are the editor trial's cases: the ones all.sh runs, each of
// which must have its checks in check.py (and no checks without a run), so
// that a case added to one file but not the other fails here by name rather
// than changing the count.
func trialCases(allSh, checkPy []byte) ([]string, error) {
	var run []string
	for line := range strings.Lines(string(allSh)) {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if m := trialOne.FindStringSubmatch(line); m != nil {
			if slices.Contains(run, m[1]) {
				return nil, fmt.Errorf("all.sh runs case %s twice", m[1])
			}
			run = append(run, m[1])
		}
	}
	var checked []string
	for _, m := range trialCheckFn.FindAllSubmatch(checkPy, -1) {
		checked = append(checked, strings.ReplaceAll(string(m[1]), "_", "-"))
	}
	var errs []string
	for _, c := range run {
		if !slices.Contains(checked, c) {
			errs = append(errs, "all.sh runs "+c+" but check.py has no case_"+strings.ReplaceAll(c, "-", "_"))
		}
	}
	for _, c := range checked {
		if !slices.Contains(run, c) {
			errs = append(errs, "check.py has case_"+strings.ReplaceAll(c, "-", "_")+" but all.sh never runs "+c)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	if len(run) == 0 {
		return nil, fmt.Errorf("no `one NAME ...` line in all.sh: has the way cases are run changed?")
	}
	return run, nil
}

// staleCaseCounts reports every "N cases" in a paragraph or table row of src
// that mentions the editor trial and whose N is not want. It also returns
// how many it checked, so a rewording that drops them all can't pass
// silently.
func staleCaseCounts(name string, src []byte, want int) (problems []string, checked int) {
	// Blocks are runs of non-blank lines outside code fences; each table
	// row is a block of its own, as rows are about different things.
	type block struct {
		start int // offset
		text  string
	}
	var blocks []block
	var cur *block
	fence := ""
	off := 0
	for line := range strings.Lines(string(src)) {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			cur = nil
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			cur = nil
		case trimmed == "":
			cur = nil
		case strings.HasPrefix(trimmed, "|") || cur == nil:
			blocks = append(blocks, block{start: off, text: line})
			cur = &blocks[len(blocks)-1]
			if strings.HasPrefix(trimmed, "|") {
				cur = nil
			}
		default:
			cur.text += line
		}
		off += len(line)
	}
	for _, b := range blocks {
		if !strings.Contains(strings.ToLower(b.text), "editor-trial") {
			continue
		}
		for _, m := range statedCases.FindAllStringSubmatchIndex(b.text, -1) {
			checked++
			if n, _ := strconv.Atoi(b.text[m[2]:m[3]]); n != want {
				problems = append(problems, fmt.Sprintf("%s:%d: says %q, but scripts/editor-trial/all.sh runs %d cases",
					name, lineAt(src, b.start+m[0]), b.text[m[0]:m[1]], want))
			}
		}
	}
	return problems, checked
}

func TestREADME_TablesRenderAsTables(t *testing.T) {
	for _, p := range brokenTables(readmeLabel, readFile(t, readme)) {
		t.Error(p)
	}
}

func TestREADME_AnchorLinksHaveTheirHeading(t *testing.T) {
	for _, p := range brokenAnchors(readmeLabel, readFile(t, readme)) {
		t.Error(p)
	}
}

func TestREADME_EditorTrialCaseCountIsCurrent(t *testing.T) {
	cases, err := trialCases(readFile(t, trialAllSh), readFile(t, trialCheck))
	if err != nil {
		t.Fatalf("scripts/editor-trial: %v", err)
	}
	problems, checked := staleCaseCounts(readmeLabel, readFile(t, readme), len(cases))
	for _, p := range problems {
		t.Error(p)
	}
	if checked == 0 {
		t.Errorf("README.md states no \"N cases\" near scripts/editor-trial any more; if that is on purpose, drop this test")
	}
}

// The checks themselves, on Markdown broken on purpose: each must find what
// it exists for, and only that.

func TestSlug_IsGitHubs(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Set up", "set-up"},
		{"Recovery (`[recovery]`)", "recovery-recovery"},
		{"User rules (`[[recovery.rules]]`)", "user-rules-recoveryrules"},
		{"See it work: `rebound demo`", "see-it-work-rebound-demo"},
		{"Neovim (codecompanion.nvim), Emacs (agent-shell), acpx", "neovim-codecompanionnvim-emacs-agent-shell-acpx"},
		{"Use `max_retries` now", "use-max_retries-now"}, // goldmark: use-max-retries-now
		{"Über -- two  spaces", "über----two--spaces"},   // goldmark drops Ü
		{"A [link](https://example.com/x) here", "a-link-here"},
		{"Fish &amp; chips", "fish--chips"},
	} {
		src := []byte("# " + c.heading + "\n")
		doc := parse(src)
		if got := slug(plainText(doc.FirstChild(), src)); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

func TestBrokenAnchors_FindsAMissingHeading(t *testing.T) {
	src := []byte("# Set up\n\n## Set up\n\n## Live or held\n\nSee [here](#set-up), [there](#set-up-1),\n[held](#live-or-held) and [gone](#signing-in).\n")
	got := brokenAnchors("x.md", src)
	want := []string{`x.md:8: link "gone" to #signing-in: no heading makes that anchor`}
	if !slices.Equal(got, want) {
		t.Errorf("brokenAnchors = %q, want %q", got, want)
	}
}

func TestBrokenTables_FindsRowsOutsideATable(t *testing.T) {
	src := []byte(`| key | default |
|---|---|
| a | 1 |

| b | 2 |
| c | 3 |

| d | 4 |

Text with a | pipe |
and more.

- | in a list | item |
  | broken | too |
`)
	var lines []string
	for _, p := range brokenTables("x.md", src) {
		lines = append(lines, strings.SplitN(p, " ", 2)[0])
	}
	if want := []string{"x.md:5:", "x.md:8:", "x.md:13:"}; !slices.Equal(lines, want) {
		t.Errorf("brokenTables flagged %q, want %q", lines, want)
	}
}

func TestTrialCases_ReadsAllShAndCheckPy(t *testing.T) {
	allSh := []byte("# one NAME SCRIPT: a comment\none() {\n  :\n}\none a  x.json --prompt hi\nKEEP_PROJ=1 NO_API_KEY=1 one mcp-dead y.json \\\n  --flag\n")
	checkPy := []byte("def case_a(r):\n    pass\ndef case_mcp_dead(r):\n    pass\ndef helper(r):\n    pass\n")
	got, err := trialCases(allSh, checkPy)
	if err != nil || !slices.Equal(got, []string{"a", "mcp-dead"}) {
		t.Errorf("trialCases = %q, %v; want [a mcp-dead]", got, err)
	}
	if _, err := trialCases(allSh, append(checkPy, "def case_b(r):\n"...)); err == nil || !strings.Contains(err.Error(), "never runs b") {
		t.Errorf("a check with no run: err = %v", err)
	}
	if _, err := trialCases(append(allSh, "one c z.json\n"...), checkPy); err == nil || !strings.Contains(err.Error(), "no case_c") {
		t.Errorf("a run with no check: err = %v", err)
	}
}

func TestStaleCaseCounts_OnlyNearTheTrial(t *testing.T) {
	src := []byte("| `scripts/editor-trial` | 19 cases run |\n| `other` | 7 cases |\n\n`scripts/editor-trial/all.sh` runs\nthem. All 35\ncases pass.\n\n```\neditor-trial: 3 cases\n```\n\nThe golden tests have 12 cases.\n")
	got, checked := staleCaseCounts("x.md", src, 35)
	want := []string{`x.md:1: says "19 cases", but scripts/editor-trial/all.sh runs 35 cases`}
	if !slices.Equal(got, want) || checked != 2 {
		t.Errorf("staleCaseCounts = %q, %d checked; want %q, 2", got, checked, want)
	}
}

package tools_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// Issue 29: what a person reads before allowing a call reads as what runs.

func TestVisible(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ls -la", "ls -la"},
		{"a\tb\nc", "a\tb\nc"},
		{"echo ✅ café", "echo ✅ café"},
		{"printf 'x'\x1b[2K\r[ok]", "printf 'x'⟨U+001B⟩[2K⟨U+000D⟩[ok]"},
		{"ls \u202eexe.txt", "ls ⟨U+202E⟩exe.txt"},
		{"rm\u200b -rf", "rm⟨U+200B⟩ -rf"},
		{"cat a\u00a0> b", "cat a⟨U+00A0⟩> b"},
		{"a >\u0338 b", "a >⟨U+0338⟩ b"},     // a stroke drawn over >
		{"\u200b\u0301", "⟨U+200B⟩⟨U+0301⟩"}, // over an escape's ⟩
		{"echo \\ \nrm -rf ~", "echo \\⟨U+0020⟩\nrm -rf ~"},
		{"echo done \t", "echo done⟨U+0020⟩⟨U+0009⟩"}, // at the very end too: a code block puts a newline after it
		{"echo ⟨U+0041⟩", "echo ⟨U+27E8⟩U+0041⟩"},
		{"x\u2028y\ufeff\U000e0041\uf8ff\u3164", "x⟨U+2028⟩y⟨U+FEFF⟩⟨U+E0041⟩⟨U+F8FF⟩⟨U+3164⟩"},
	} {
		got, hidden := tools.Visible(tt.in)
		if got != tt.want || hidden != (tt.in != tt.want) {
			t.Errorf("Visible(%q) = %q, %v; want %q", tt.in, got, hidden, tt.want)
		}
		if back := tools.Unvisible(got); back != tt.in {
			t.Errorf("Unvisible(%q) = %q, want %q", got, back, tt.in)
		}
	}
	for in, want := range map[string]string{
		"a\nb\tc":   "a⟨U+000A⟩b⟨U+0009⟩c",
		"docs ":     "docs⟨U+0020⟩", // another directory than docs
		"  a b  ":   "⟨U+0020⟩⟨U+0020⟩a b⟨U+0020⟩⟨U+0020⟩",
		"my docs/x": "my docs/x",
	} {
		if got, _ := tools.VisibleLine(in); got != want {
			t.Errorf("VisibleLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// escape matches what Visible writes for one character.
var escape = regexp.MustCompile(`⟨U\+[0-9A-F]{4,6}⟩`)

// checkShown fails unless shown reads back as exactly want and nothing in
// it is hidden: with each escape written as one plain letter, Visible has
// nothing left to escape.
func checkShown(t *testing.T, what, shown, want string) {
	t.Helper()
	if back := tools.Unvisible(shown); back != want {
		t.Fatalf("%s: %q reads back as %q, want %q", what, shown, back, want)
	}
	if plain := escape.ReplaceAllString(shown, "X"); plain != "" {
		if again, hidden := tools.Visible(plain); hidden {
			t.Fatalf("%s: %q still hides something: %q", what, shown, again)
		}
	}
}

func FuzzVisible(f *testing.F) {
	for _, s := range []string{"ls", "a \nb", "\x1b[31m", "\u202e\u0301", "⟨U+0041⟩", "e\u0301", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\ufffd") // as JSON decoding leaves a model's text
		}
		shown, _ := tools.Visible(s)
		checkShown(t, "Visible", shown, s)
		line, _ := tools.VisibleLine(s)
		checkShown(t, "VisibleLine", line, s)
		if strings.ContainsAny(line, "\n\t") || strings.HasPrefix(line, " ") || strings.HasSuffix(line, " ") {
			t.Fatalf("VisibleLine(%q) = %q spans lines", s, line)
		}
	})
}

// pieces are what generated commands are made of: shell text, lines,
// backtick fences, and every kind of character Visible must show.
var pieces = []string{"echo hello", " && ", "rm -rf ~", "\n", "\\\n", " \\ \n", "```", "`", "  ", "\t",
	"\x1b[2K", "\r", "\u202e", "\u2066", "\u200b", "\u00a0", "\u0338", "⟨U+0041⟩", "ü", "日本", "\ufffd", "\x00", "\x7f", "\u0085"}

// randomText is a command or an argument: short, long, or very long.
func randomText(r *rand.Rand) string {
	var b strings.Builder
	n := []int{1, 5, 40, 600, 3000}[r.IntN(5)]
	for range n {
		if r.IntN(3) == 0 {
			b.WriteString(pieces[r.IntN(len(pieces))])
		} else {
			b.WriteByte("abcdefghij ;|>$()"[r.IntN(17)])
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		b.WriteString("x")
	}
	return b.String()
}

// titleBlock is the code block of a title made by CommandTitle or
// MCPTitle, as written (escapes and all): what is under the first line's
// colon, inside the fence.
func titleBlock(t *testing.T, title string) string {
	t.Helper()
	first, rest, ok := strings.Cut(title, "\n")
	if !ok || !strings.HasSuffix(first, ":") {
		t.Fatalf("title %q has no block", title)
	}
	fence, rest, _ := strings.Cut(rest, "\n")
	fence = strings.TrimRight(fence, "shjon")
	body, _, ok := strings.Cut("\n"+rest, "\n"+fence+"\n")
	if !ok {
		body, _, ok = strings.Cut("\n"+rest+"\n", "\n"+fence+"\n")
	}
	if !ok {
		t.Fatalf("title %q: block not closed by %s", title, fence)
	}
	return strings.TrimPrefix(body, "\n")
}

// CheckWholeTitle fails unless title, made for text, shows it whole on its
// own (verbatim, nothing hidden) or says plainly that part is not shown and
// where it is, showing a beginning that reads back as the text's.
func checkWholeTitle(t *testing.T, title, text string) {
	t.Helper()
	text = strings.TrimRight(text, "\n")
	first, _, _ := strings.Cut(title, "\n")
	if !strings.Contains(title, "\n") { // one line: the text as it is
		if !strings.Contains(title, "`"+text+"`") && !strings.Contains(title, " "+text+" `") {
			t.Fatalf("one-line title %q does not hold %q verbatim", title, text)
		}
		return
	}
	block := titleBlock(t, title)
	checkShown(t, "title", block, tools.Unvisible(block))
	got := tools.Unvisible(block)
	switch {
	case got == text:
		if strings.Contains(first, "Only the first") {
			t.Fatalf("title %q says it is cut but is whole", first)
		}
	case strings.HasPrefix(text, got):
		if !strings.Contains(first, "Only the first") || !strings.Contains(first, "details") || !strings.HasSuffix(title, "[the rest is not shown here]") {
			t.Fatalf("title %q shows part of %d bytes without saying so plainly", first, len(text))
		}
	default:
		t.Fatalf("title block %q is not what runs, %q", got, text)
	}
	if _, hidden := tools.Visible(text); hidden != strings.Contains(first, "invisible or control characters") {
		t.Fatalf("title %q: hidden characters %v, and the first line does not say so", first, hidden)
	}
}

// raceScaled is n cases, or an eighth of them under -race: the titles are
// pure functions of one goroutine, where the detector finds nothing and
// costs twenty times the time. The run without -race (CI has one) checks
// all n.
func raceScaled(n int) int {
	if testkit.Race {
		return n / 8
	}
	return n
}

// The property: whatever the command, the title shows all of it, or its
// beginning and a plain word that the rest is not shown, and the directory.
func TestCommandTitleShowsTheWholeCommand(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(29, 1))
	for range raceScaled(800) {
		command, dir := randomText(r), "/w/"+randomText(r)
		if len(dir) > 200 {
			dir = dir[:200]
		}
		dir = strings.ToValidUTF8(dir, "")
		title := tools.CommandTitle(command, dir)
		checkWholeTitle(t, title, command)
		first, _, _ := strings.Cut(title, "\n")
		shownDir, _ := tools.VisibleLine(dir)
		if !strings.Contains(first, shownDir) {
			t.Fatalf("title %q does not name the directory %q", first, dir)
		}
	}
}

func TestMCPTitleShowsTheWholeArguments(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(29, 2))
	for range raceScaled(500) {
		in, _ := json.Marshal(map[string]string{"query": randomText(r)})
		title := tools.MCPTitle("db", "run_sql", in)
		if !strings.Contains(title, "\n") {
			checkWholeTitle(t, title, string(in))
			continue
		}
		var want, got any
		block := titleBlock(t, title)
		if err := json.Unmarshal([]byte(tools.Unvisible(block)), &got); err != nil {
			if !strings.Contains(title, "Only the first") {
				t.Fatalf("title %q: block is not the arguments: %v", title, err)
			}
			continue
		}
		_ = json.Unmarshal(in, &want)
		if got.(map[string]any)["query"] != want.(map[string]any)["query"] {
			t.Fatalf("title %q shows other arguments than %s", title, in)
		}
	}
	if got := tools.MCPTitle("files", "delete", json.RawMessage(`{"path":"/tmp/a"}`)); got != "Call `delete` of the MCP server `files` with `{\"path\":\"/tmp/a\"}`" {
		t.Errorf("short arguments: %q", got)
	}
}

// A very long command: the title holds its beginning, the first line says
// so, how much is shown, and where the rest is.
func TestCommandTitleSaysWhatItLeavesOut(t *testing.T) {
	long := strings.Repeat("echo step\n", 150) + "rm -rf ~"
	title := tools.CommandTitle(long, "/w")
	checkWholeTitle(t, title, long)
	if !strings.Contains(title, "(151 lines)") || strings.Contains(title, "rm -rf") {
		t.Errorf("title %q", title[:200])
	}
	oneLine := strings.Repeat("x", 5000) + "\u202e; rm -rf ~"
	title = tools.CommandTitle(oneLine, "/w")
	checkWholeTitle(t, title, oneLine)
	if !strings.Contains(title, "Only the first 4000 of its 5018 characters") {
		t.Errorf("title %q", title[:300])
	}
}

// A link on the way is named: "notes.txt" that leads to .git/hooks/x is
// asked about as such; a root reached through a link is not a link.
func TestLinkTarget(t *testing.T) {
	real := t.TempDir()
	root := filepath.Join(t.TempDir(), "root")
	testkit.Symlink(t, real, root)
	if err := os.MkdirAll(filepath.Join(real, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.Symlink(t, filepath.Join(real, "src", "main.go"), filepath.Join(real, "notes.txt"))
	ws := tools.NewWorkspace(root)
	for path, want := range map[string]string{
		"src/main.go": "", "new.txt": "", ".": "",
		"notes.txt": filepath.Join(real, "src", "main.go"),
	} {
		if got := ws.LinkTarget(path); got != want {
			t.Errorf("LinkTarget(%q) = %q, want %q", path, got, want)
		}
	}
}

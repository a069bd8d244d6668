package docs

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark/ast"

	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
)

// codeBlocks are the README's fenced code blocks in language lang.
func codeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	src := readFile(t, readme)
	var out []string
	ast.Walk(parse(src), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if fc, ok := n.(*ast.FencedCodeBlock); ok && entering && string(fc.Language(src)) == lang {
			var b strings.Builder
			for i := 0; i < fc.Lines().Len(); i++ {
				seg := fc.Lines().At(i)
				b.Write(seg.Value(src))
			}
			out = append(out, b.String())
		}
		return ast.WalkContinue, nil
	})
	return out
}

// TestReadme_CodeCompanionEnvPassesNoNames: codecompanion passes an env
// value that names a variable Neovim does not have as the literal text, so
// `OPENAI_API_KEY = "OPENAI_API_KEY"` sends the word as the key (401) and
// beats the key `rebound login` stored. No value of a snippet's env may
// look like a variable's name.
func TestReadme_CodeCompanionEnvPassesNoNames(t *testing.T) {
	blocks := codeBlocks(t, "lua")
	if len(blocks) == 0 {
		t.Fatal("the README has no Lua snippet")
	}
	envTable := regexp.MustCompile(`(?s)\benv\s*=\s*\{(.*?)\}`)
	entry := regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"]*)"`)
	varName := regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	envs := 0
	for _, b := range blocks {
		for _, m := range envTable.FindAllStringSubmatch(b, -1) {
			envs++
			for _, e := range entry.FindAllStringSubmatch(m[1], -1) {
				if varName.MatchString(e[2]) {
					t.Errorf("codecompanion env %s = %q names a variable: without it in Neovim, the name itself is passed", e[1], e[2])
				}
			}
		}
	}
	if envs == 0 {
		t.Error("no env table in the README's Lua snippets: the test reads nothing")
	}
}

// TestReadme_ZedSnippetSetsOnlyWhatRebound reads: no default_model (Rebound
// offers its model as a config option), default_config_options only of
// Rebound's options, and thought_level only with a model that takes it.
func TestReadme_ZedSnippetSetsOnlyWhatReboundReads(t *testing.T) {
	found := false
	for _, b := range codeBlocks(t, "json") {
		var doc struct {
			AgentServers map[string]map[string]json.RawMessage `json:"agent_servers"`
		}
		if json.Unmarshal([]byte(b), &doc) != nil || doc.AgentServers == nil {
			continue
		}
		for name, entry := range doc.AgentServers {
			found = true
			if _, ok := entry["default_model"]; ok {
				t.Errorf("%s: default_model does nothing for Rebound", name)
			}
			var opts map[string]string
			if raw, ok := entry["default_config_options"]; ok {
				if err := json.Unmarshal(raw, &opts); err != nil {
					t.Fatalf("%s: default_config_options: %v", name, err)
				}
			}
			for k := range opts {
				if k != agent.ModeConfigID && k != agent.ModelConfigID && k != agent.ThoughtConfigID {
					t.Errorf("%s: default_config_options.%s is no option of Rebound's", name, k)
				}
			}
			if _, ok := opts[agent.ThoughtConfigID]; ok && !llm.TakesReasoningEffort(opts[agent.ModelConfigID]) {
				t.Errorf("%s: thought_level is not offered for %q, which takes no reasoning effort", name, opts[agent.ModelConfigID])
			}
		}
	}
	if !found {
		t.Error("no agent_servers snippet in the README: the test reads nothing")
	}
}

// TestReadme_FirstSteps: what a newcomer meets first is said: the slash
// commands' prefix in codecompanion, agent-shell's restore of history, how
// long the tests take, and how to find a session's id.
func TestReadme_FirstSteps(t *testing.T) {
	s := string(readFile(t, readme))
	for _, want := range []string{
		"slash commands are typed after `\\`",
		"`agent-shell-session-restore-verbosity` is `'full`",
		"`rebound sessions`",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the README does not say %q", want)
		}
	}
	setUp, _, _ := strings.Cut(s[strings.Index(s, "## Set up"):], "\n## ")
	if !regexp.MustCompile("go test \\./\\.\\.\\.[^\n]*\n(?:[^\n]*\n){0,6}[^\n]*takes (?:about )?[0-9]").MatchString(setUp) {
		t.Errorf("the Set up section does not say, near the test command, how long `go test ./...` takes:\n%s", setUp)
	}
}

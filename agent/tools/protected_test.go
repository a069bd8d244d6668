package tools_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/agent/tools"
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
	symlink(t, ".git/hooks", filepath.Join(proj, "notes"))
	symlink(t, ".vscode/tasks.json", filepath.Join(proj, "todo.json"))
	symlink(t, "src", filepath.Join(proj, "code"))
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

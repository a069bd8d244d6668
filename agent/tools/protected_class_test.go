package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// hookClass is the class Protected must cover, written from each tool's own
// documentation of where it reads its configuration, independently of how
// protected.go matches it. Each entry is a path relative to a workspace root
// (a directory entry is shown with a file below it).
var hookClass = func() []string {
	var c []string
	add := func(dots, stems, exts []string) {
		for _, d := range dots {
			for _, s := range stems {
				for _, e := range exts {
					c = append(c, d+s+e)
				}
			}
		}
	}
	both, dot := []string{"", "."}, []string{"."}
	data := []string{".yml", ".yaml", ".json", ".jsonc", ".toml"}
	code := []string{".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"}
	// Version control.
	c = append(c, ".git/config", ".git/hooks/pre-commit", "sub/module/.git", ".git/info/attributes", "GIT~1/config",
		".hg/hgrc", ".jj/repo/config.toml", ".sl/config", ".svn/wc.db", ".gitattributes", "docs/.gitattributes")
	// Git hook runners: directories of hook scripts...
	c = append(c, ".husky/pre-commit", ".husky/_/husky.sh", ".githooks/pre-push", ".git-hooks/pre_commit/check.rb",
		".lefthook/pre-commit/lint.sh", ".lefthook-local/pre-push/x", ".cargo-husky/hooks/pre-commit")
	// ... and their configuration in every form the tool reads.
	add(both, []string{"lefthook", "lefthook-local"}, data)
	c = append(c, ".config/lefthook.yml")
	add(dot, []string{"lintstagedrc"}, append(append([]string{""}, data...), code...))
	add(both, []string{"lint-staged.config"}, code)
	add(dot, []string{"huskyrc"}, append(append([]string{""}, data...), code...))
	add(both, []string{"husky.config"}, code)
	add(both, []string{"nano-staged"}, append([]string{".json"}, code...))
	c = append(c, ".nanostagedrc")
	add(both, []string{"simple-git-hooks"}, append([]string{".json"}, code...))
	add(dot, []string{"pre-commit-config"}, []string{".yaml", ".yml"})
	c = append(c, ".overcommit.yml", "captainhook.json", "grumphp.yml", "grumphp.yaml", "grumphp.yml.dist",
		".rusty-hook.toml", "rusty-hook.toml", "hk.pkl")
	// On entering the directory.
	c = append(c, ".envrc", ".direnv/python-3.12/bin/activate", ".env", ".env.leave", ".tool-versions",
		".config/mise.toml", ".config/mise/config.toml", ".config/mise/conf.d/x.toml", "mise/config.toml", ".mise/config.toml",
		"mise.production.toml", ".mise.dev.local.toml", ".rtx.toml",
		"devenv.nix", "devenv.yaml", "devenv.local.nix", ".devenv/state/x", "devbox.json", "shell.nix",
		".venv/bin/activate", ".venv/lib/python3.12/site-packages/evil.pth", ".venv/pyvenv.cfg")
	add(both, []string{"mise", "mise.local"}, []string{".toml"})
	// On opening the folder or a file.
	c = append(c, ".vscode/tasks.json", ".vscode/settings.json", ".vscode/mcp.json", "team.code-workspace",
		".zed/tasks.json", ".zed/settings.json", ".idea/workspace.xml", ".idea/watcherTasks.xml", ".fleet/run.json",
		".theia/tasks.json", ".helix/languages.toml", "proj.sublime-project", ".devcontainer/devcontainer.json",
		".devcontainer.json", ".dir-locals.el", ".dir-locals-2.el", ".exrc", "_exrc", ".vimrc", "_vimrc", ".gvimrc",
		".nvimrc", ".nvim.lua", ".lazy.lua", ".lvimrc", "node_modules/.bin/eslint", "node_modules/typescript/lib/tsserver.js",
		".claude/settings.json", ".cursor/mcp.json", ".cursor/hooks.json", ".gemini/settings.json", ".codex/config.toml",
		".kiro/hooks/x.kiro.hook", ".continue/config.yaml", ".windsurf/rules", ".mcp.json")
	// The program a tool's name runs.
	c = append(c, ".npmrc", ".yarnrc", ".yarnrc.yml", ".yarnrc.yaml", ".yarn/releases/yarn-4.5.0.cjs", ".yarn/plugins/p.cjs",
		".pnp.cjs", ".pnp.js", ".pnp.loader.mjs", ".pnpmfile.cjs", ".pnpmfile.mjs", ".cargo/config.toml", ".cargo/config",
		"rust-toolchain", "rust-toolchain.toml", "gradle/wrapper/gradle-wrapper.properties", "gradle/wrapper/gradle-wrapper.jar",
		".mvn/wrapper/maven-wrapper.properties", ".mvn/extensions.xml", ".mvn/jvm.config")
	return c
}()

// ordinaryFiles must never be protected: the project's code, its build
// files, and names that are near a protected one but read by nothing that
// runs them.
var ordinaryFiles = []string{
	"main.go", "src/app.ts", "lib/util.js", "pkg/server/handler_test.go", "README.md", "docs/guide.md",
	"Makefile", "build.rs", "Cargo.toml", "go.mod", "go.sum", "flake.nix", "pyproject.toml", "setup.py",
	"build.gradle", "settings.gradle.kts", "gradle.properties", "pom.xml", "package.json", "package-lock.json",
	"yarn.lock", "pnpm-lock.yaml", "tsconfig.json", "eslint.config.js", ".eslintrc.json", ".prettierrc", ".editorconfig",
	".gitignore", ".dockerignore", ".github/workflows/ci.yml", ".pre-commit-hooks.yaml", ".gitmodules",
	".nvmrc", ".node-version", ".python-version", ".ruby-version", ".env.example", ".env.local", "env.go",
	"tasks.json", "settings.json", "config.toml", "config/settings.yml", "src/git/config.go", "vscode/extension.ts",
	"hooks/useHooks.ts", "src/hooks/pre-commit.ts", "docs/pre-commit.md", "docs/lefthook.md", "lefthook.go",
	"husky.js", "src/husky/index.ts", "lint-staged.js", "npmrc", "yarnrc.go", "pnp.go", "src/mise/main.go",
	"mise.go", "mise/config.go", "cmd/rtx/main.go", "internal/githooks/install.go", "git-hooks/README.md", "hk.go", "venv.py", "node_module.js", "cargo/config.toml", "idea/notes.txt",
	"Dockerfile", "docker-compose.yml", "Justfile", "Taskfile.yml", "Procfile", ".air.toml", "deno.json", "bunfig.toml",
}

// spell writes entry (a slash-separated relative path) the way ops ask:
// each op byte picks a rewrite, applied in order. None of them changes
// which file the path names once resolved, except by case (which a
// case-insensitive file system ignores) and the characters such a file
// system drops. mklink makes a link and returns its path relative to the
// root; nil leaves links out.
func spell(root, entry string, ops []byte, mklink func(target string) string) string {
	comps := strings.Split(entry, "/")
	prefix, suffix, link := "", "", false
	for _, op := range ops {
		switch op % 11 {
		case 0: // upper case
			comps[len(comps)-1] = strings.ToUpper(comps[len(comps)-1])
			comps[0] = strings.ToUpper(comps[0])
		case 1: // mixed case, from the op's bits
			for i, c := range comps {
				var b strings.Builder
				for j, r := range c {
					if (int(op)>>(j%8))&1 == 1 {
						r = unicode.ToUpper(r)
					}
					b.WriteRune(r)
				}
				comps[i] = b.String()
			}
		case 2: // nested in an ordinary subdirectory, as in a monorepo
			comps = append([]string{"packages", fmt.Sprint("app", op)}, comps...)
		case 3: // after the root when the path is already absolute
			prefix += "./"
		case 4: // through a detour that cleans away
			comps = append([]string{"src", ".."}, comps...)
		case 5:
			suffix = "/"
		case 6:
			prefix += "." + string(filepath.Separator) + string(filepath.Separator)
		case 7: // what NTFS drops
			comps[len(comps)-1] += ". "
		case 8: // what HFS+ ignores
			for i, c := range comps {
				if len(c) > 1 {
					comps[i] = c[:1] + "\u200d" + c[1:]
				}
			}
		case 9: // absolute
			prefix = root + string(filepath.Separator)
		case 10:
			link = true
		}
	}
	if link && mklink != nil && !slices.Contains(comps, "..") {
		// Through a link to the first component, made last so that no
		// other rewrite respells the link's own name.
		comps[0] = mklink(comps[0])
	}
	return prefix + strings.Join(comps, "/") + suffix
}

// linker makes links in a fresh directory below root, each named plainly
// and pointing (relative, dangling or not) at target in root.
func linker(t testing.TB, root string) func(string) string {
	dir, err := os.MkdirTemp(root, "d")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	return func(target string) string {
		n++
		name := fmt.Sprintf("plain%d.txt", n)
		testkit.Symlink(t, filepath.Join("..", target), filepath.Join(dir, name))
		return filepath.Base(dir) + "/" + name
	}
}

// Every entry of the class is protected in every spelling, alone and in
// pairs of rewrites; no ordinary file is, in any spelling.
func TestWorkspace_ProtectedClass(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws := tools.NewWorkspace(root)
	var opsets [][]byte
	for a := range byte(11) {
		opsets = append(opsets, []byte{a})
		for k := range byte(4) { // a sample of the pairs, each op once before and after others
			opsets = append(opsets, []byte{a, (a*3 + k + 1) % 11, a + 11*3})
		}
	}
	for _, entry := range hookClass {
		mk := linker(t, root)
		for _, ops := range opsets {
			p := spell(root, entry, ops, mk)
			if got := ws.Protected(p); !strings.HasPrefix(got, "it is ") {
				t.Errorf("Protected(%q) (%s, ops %v) = %q, want a reason", p, entry, ops, got)
			}
		}
	}
	for _, entry := range ordinaryFiles {
		for _, ops := range opsets {
			p := spell(root, entry, ops, nil)
			if got := ws.Protected(p); got != "" {
				t.Errorf("Protected(%q) (%s, ops %v) = %q, want \"\"", p, entry, ops, got)
			}
		}
	}
}

// FuzzProtected: any entry of the class, spelled any way, nested anywhere,
// reached through a link, stays protected; an ordinary file never becomes
// protected.
func FuzzProtected(f *testing.F) {
	f.Add(uint16(0), []byte{1, 2, 8})
	f.Add(uint16(7), []byte{10, 5, 0})
	f.Add(uint16(40), []byte{9, 7, 4})
	f.Add(uint16(1000), []byte{3, 1, 6})
	root := f.TempDir()
	ws := tools.NewWorkspace(root)
	f.Fuzz(func(t *testing.T, pick uint16, ops []byte) {
		ops = ops[:min(len(ops), 12)]
		n := int(pick) % (len(hookClass) + len(ordinaryFiles))
		if n < len(hookClass) {
			mk := linker(t, root)
			p := spell(root, hookClass[n], ops, mk)
			if got := ws.Protected(p); !strings.HasPrefix(got, "it is ") {
				t.Errorf("Protected(%q) (%s) = %q, want a reason", p, hookClass[n], got)
			}
			return
		}
		entry := ordinaryFiles[n-len(hookClass)]
		if p := spell(root, entry, ops, nil); ws.Protected(p) != "" {
			t.Errorf("Protected(%q) (%s) = %q, want \"\"", p, entry, ws.Protected(p))
		}
	})
}

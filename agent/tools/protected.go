package tools

import "strings"

// Protected returns why a write to path needs a person's yes even when
// edits are otherwise allowed, or "" when nothing about the place calls for
// it. The reason is short and for a person ("it is in .git, where …").
//
// The places are those where a file makes a program run without anyone
// choosing to run it: a git operation, opening the folder in an editor,
// entering the directory in a shell. Each component of the path below its
// workspace root is checked, both as given and on the real target (a link
// named notes pointing into .git/hooks is caught); names are compared the
// way case-insensitive file systems compare them, after dropping what NTFS
// and HFS+ ignore in a name (trailing dots and spaces, zero-width
// characters), as git does for .git.
//
//   - .git (the directory, or a worktree's or submodule's .git file): hooks,
//     and settings such as core.fsmonitor, core.hooksPath or a diff driver,
//     run programs on the next git command; GIT~1 is its NTFS short name.
//   - .hg (hooks in .hg/hgrc), .jj (diff and merge tools, fsmonitor in the
//     repository's config) and .svn (Subversion's own records of the working
//     copy: nothing runs from it, but only svn should change it).
//   - .husky and .githooks: hook scripts, run by git where core.hooksPath
//     points to them; .pre-commit-config.yaml: run by pre-commit on every
//     commit; .gitattributes: chooses the filter, diff and merge drivers git
//     runs.
//   - .envrc: direnv runs it on entering the directory.
//   - .vscode, .zed, .idea, .helix: tasks (some run when the folder opens),
//     launch configurations, language servers and tool paths.
//   - .devcontainer and .devcontainer.json: initializeCommand runs on this
//     machine, the other commands in the container.
//   - .dir-locals.el and .dir-locals-2.el: Emacs evaluates them on opening a
//     file below them; .nvim.lua, .nvimrc, .exrc: Neovim and Vim run them on
//     starting in their directory when 'exrc' is set.
//
// Left out: build files (Makefile, package.json, .cargo/config.toml, go
// generate directives and the like), since building runs the project's code
// anyway and asking for each would ask for nearly every edit; CI settings
// (.github/workflows), which run elsewhere; .gitmodules, whose update
// commands git no longer takes from that file.
func (w *Workspace) Protected(path string) string {
	if strings.TrimSpace(path) == "" {
		return ""
	}
	abs := w.Abs(path)
	if why := protectedBelow(w.roots, abs); why != "" {
		return why
	}
	if real, err := resolveLenient(abs); err == nil {
		return protectedBelow(w.real, real)
	}
	return ""
}

var protectedNames = map[string]string{
	".git":                    "it is in .git (or is a .git file), where a hook or a setting such as core.fsmonitor makes git run a program",
	"git~1":                   "it is in .git (here by its short Windows name), where a hook or a setting such as core.fsmonitor makes git run a program",
	".hg":                     "it is in .hg, where a hook in .hg/hgrc makes Mercurial run a program",
	".jj":                     "it is in .jj, where the repository's config names programs jj runs (diff and merge tools, fsmonitor)",
	".svn":                    "it is in .svn, Subversion's record of the working copy, which only svn should change",
	".husky":                  "it is in .husky, whose scripts git runs as hooks",
	".githooks":               "it is in .githooks, whose scripts git runs as hooks when core.hooksPath points there",
	".pre-commit-config.yaml": "it is .pre-commit-config.yaml, whose hooks pre-commit runs on every commit",
	".gitattributes":          "it is a .gitattributes file, which chooses the filter, diff and merge drivers git runs",
	".envrc":                  "it is an .envrc file, which direnv runs on entering its directory",
	".vscode":                 "it is in .vscode, where tasks (some run when the folder opens), launch configurations and settings make VS Code run programs",
	".zed":                    "it is in .zed, where tasks and language-server settings make Zed run programs",
	".idea":                   "it is in .idea, where run configurations and tool settings make JetBrains IDEs run programs",
	".helix":                  "it is in .helix, where languages.toml names the language servers Helix starts",
	".devcontainer":           "it is in .devcontainer, whose commands dev-container tools run (initializeCommand on this machine)",
	".devcontainer.json":      "it is .devcontainer.json, whose commands dev-container tools run (initializeCommand on this machine)",
	".dir-locals.el":          "it is an Emacs .dir-locals.el file, which Emacs evaluates on opening a file below it",
	".dir-locals-2.el":        "it is an Emacs .dir-locals-2.el file, which Emacs evaluates on opening a file below it",
	".nvim.lua":               "it is a .nvim.lua file, which Neovim runs on starting in its directory when 'exrc' is set",
	".nvimrc":                 "it is a .nvimrc file, which Neovim runs on starting in its directory when 'exrc' is set",
	".exrc":                   "it is an .exrc file, which Vim and Neovim run on starting in its directory when 'exrc' is set",
}

// protectedBelow checks the components of p below the shallowest of roots
// holding it, or all of p when none does.
func protectedBelow(roots []string, p string) string {
	rel, best := p, ""
	for _, r := range roots {
		if within(r, p) && (best == "" || len(r) < len(best)) {
			best = r
		}
	}
	if best != "" {
		rel = p[len(best):]
	}
	for _, c := range splitPath(rel) {
		if why, ok := protectedNames[foldName(c)]; ok {
			return why
		}
	}
	return ""
}

// foldName is a path component as a case-insensitive file system may see
// it: without the code points HFS+ ignores, without the trailing dots and
// spaces NTFS drops, lower case.
func foldName(c string) string {
	c = strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, c)
	return strings.ToLower(strings.TrimRight(c, ". "))
}

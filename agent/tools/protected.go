package tools

import (
	"cmp"
	"encoding/json"
	"reflect"
	"strings"
)

// Protected returns why a write to path needs a person's yes even when
// edits are otherwise allowed, or "" when nothing about the place calls for
// it. The reason is short and for a person ("it is in .git, where …").
//
// The rule. A place is protected when both hold:
//
//  1. its job is to tell a developer tool which commands or programs to run
//     (hooks, tasks, a language server's or formatter's command, the
//     program that stands in for the tool itself, a shell script or
//     environment loaded on entering the directory), rather than to be the
//     project's code or describe its build; and
//  2. that tool runs them on an action the person takes for another
//     purpose: committing, checking out or pushing; entering the directory;
//     opening the folder or a file in an editor, or saving one; invoking the
//     tool by name for anything at all (yarn, npm, cargo, gradle, the next
//     agent), where the file decides what that name runs.
//
// Such a file turns the person's next routine action into running what the
// model wrote, before anyone has looked at it; and the model rarely has a
// reason to touch one, so asking costs little.
//
// Left out, by the same rule: the project's code and build descriptions
// (sources, tests, Makefile, build.rs, build.gradle, flake.nix, Cargo.toml,
// package.json's scripts, linter and bundler configuration written as code
// such as eslint.config.js). They run when the person builds, tests, lints
// or installs, which is what letting the model edit them is for, and some
// of them run on opening the folder too (rust-analyzer builds build.rs,
// Gradle sync evaluates build.gradle, a language server loads
// eslint.config.js): a rule that reached them would ask for nearly every
// edit and protect nothing. For the same reason what a hook or task in turn
// runs (a script it names, `make lint`, the tests) is the project's code
// and is not protected; the hook configuration that chose to run it is.
// Installing dependencies is running code the project chose (every
// dependency's install scripts run too), so package.json's lifecycle
// scripts are left out with the dependency list. Files that only pick a
// released version (.nvmrc, .python-version, go.mod's toolchain) are out;
// those that can name a directory whose programs run instead
// (.tool-versions' path:, rust-toolchain.toml's path) are in. flake.nix is
// the project's build, though nix-direnv's `use flake` runs its shell hook
// on entering the directory; shell.nix, devenv and devbox.json, which only
// describe that shell, are in. Gradle's init scripts live in the user's
// Gradle home, outside any workspace. CI settings
// (.github/workflows) run elsewhere, and so do .pre-commit-hooks.yaml's
// hooks (in repositories that pin this one); .gitmodules' update commands
// git no longer takes from that file.
//
// Mixed files are checked by what changes: in package.json (ProtectedWrite)
// the keys hook runners read at commit time (husky, lint-staged,
// simple-git-hooks, pre-commit, gitHooks, config.ghooks, …) and
// packageManager (which program corepack runs as yarn or pnpm) ask; the
// rest does not.
//
// What is protected, by tool (protectedDirs, protectedNames and
// protectedFamilies hold the reasons):
//
//   - Version control: .git (directory, or a worktree's or submodule's .git
//     file; GIT~1 is its NTFS short name) with its hooks and settings such as
//     core.fsmonitor and core.hooksPath; .hg, .jj, .sl; .svn, which only svn
//     should change; .gitattributes, which chooses filter, diff and merge
//     drivers.
//   - Git hook runners: hook directories (.husky, .githooks, .git-hooks,
//     .lefthook, .lefthook-local, .cargo-husky, and wherever core.hooksPath
//     points, below) and
//     the configuration of lefthook, husky (.huskyrc*), lint-staged,
//     nano-staged, simple-git-hooks, pre-commit, overcommit, CaptainHook,
//     GrumPHP, rusty-hook and hk, in every form the tool reads.
//   - On entering the directory: .envrc and .direnv (direnv), .env and
//     .env.leave (autoenv runs them; direnv and shell plugins load .env),
//     mise's configuration (mise.toml and its variants, .mise,
//     .config/mise), .tool-versions, devenv, devbox.json, shell.nix, .venv.
//   - On opening the folder or a file: .vscode, *.code-workspace, .zed,
//     .idea, .fleet, .theia, .helix, *.sublime-project, .devcontainer and
//     .devcontainer.json, the exrc files Vim and Neovim run (.exrc, .vimrc,
//     .nvimrc, .nvim.lua, .lazy.lua, .lvimrc, …), Emacs's .dir-locals.el;
//     node_modules, whose code language servers and editor extensions load;
//     other agents' settings (.claude, .cursor, .gemini, .codex, .kiro,
//     .continue, .windsurf, .mcp.json), whose MCP servers and hooks run when
//     that agent opens the folder.
//   - The program a tool's name runs: .npmrc (script-shell, node-options,
//     git), .yarnrc and .yarnrc.yml (yarnPath, plugins), .yarn, .pnp.cjs,
//     .pnpmfile.cjs (pnpm's install hooks), .cargo (rustc-wrapper, linker,
//     runner), rust-toolchain(.toml), the Gradle wrapper's properties and
//     jar, .mvn (Maven's wrapper and extensions).
//
// Names are matched by their structure, not one string each: a family is a
// base name, with its leading dot and without it where the tool reads both,
// with any of the extensions the tool reads (yml, yaml, json, toml, js, cjs,
// mjs, ts, …) and the middle parts it allows (lint-staged.config.js,
// mise.local.toml). Each component
// of the path below its workspace root is checked, both as given and on the
// real target (a link named notes pointing into .git/hooks is caught), so
// a directory such as .husky protects everything below it and a file's
// name counts in whatever subdirectory it is, as tools such as lint-staged
// and mise read nested configuration. Names are compared the way
// case-insensitive file systems compare them, after dropping what NTFS and
// HFS+ ignore in a name (trailing dots and spaces, zero-width characters),
// as git does for .git.
//
// Wherever a repository's core.hooksPath points (scripts/hooks, say), the
// hooks there are protected too, read from the config of every repository
// holding the path (includes are not followed). Not recognised: a virtual
// environment not called .venv.
func (w *Workspace) Protected(path string) string {
	if strings.TrimSpace(path) == "" {
		return ""
	}
	abs := w.Abs(path)
	if why := cmp.Or(protectedBelow(w.roots, abs), protectedHooksPath(abs)); why != "" {
		return why
	}
	if real, err := resolveLenient(abs); err == nil {
		return cmp.Or(protectedBelow(w.real, real), protectedHooksPath(real))
	}
	return ""
}

// ProtectedWrite is Protected for a write that changes old (nil: a new
// file) into updated: it also asks for a change to what hook runners and
// corepack read in a package.json, on the path as given or its real target.
func (w *Workspace) ProtectedWrite(path string, old *string, updated string) string {
	if why := w.Protected(path); why != "" || strings.TrimSpace(path) == "" {
		return why
	}
	abs := w.Abs(path)
	isPackage := foldName(lastComponent(abs)) == "package.json"
	if real, err := resolveLenient(abs); err == nil && foldName(lastComponent(real)) == "package.json" {
		isPackage = true
	}
	if !isPackage {
		return ""
	}
	before := ""
	if old != nil {
		before = *old
	}
	return packageHookChange(before, updated)
}

func lastComponent(p string) string {
	parts := splitPath(p)
	if len(parts) == 0 {
		return ""
	}
	return parts[len(parts)-1]
}

// packageHookKeys are the package.json keys a tool reads to decide what runs
// on a commit or push, or which program runs as the package manager; each
// says what reads it.
var packageHookKeys = []struct{ key, why string }{
	{"husky", "husky (before version 5) runs as git hooks"},
	{"lint-staged", "lint-staged runs on every commit"},
	{"nano-staged", "nano-staged runs on every commit"},
	{"simple-git-hooks", "simple-git-hooks installs as git hooks"},
	{"pre-commit", "the pre-commit package runs on every commit"},
	{"precommit", "the pre-commit package runs on every commit"},
	{"pre-push", "the pre-push package runs on every push"},
	{"prepush", "the pre-push package runs on every push"},
	{"gitHooks", "yorkie runs as git hooks"},
	{"config.ghooks", "ghooks runs as git hooks"},
	{"packageManager", "corepack reads to choose the program that runs as yarn or pnpm"},
}

// packageHookChange says why a change of a package.json from before to
// after asks, or "" when none of packageHookKeys changes. An after that is
// not a JSON object asks: what the tools would make of it is not known
// here. A before that is not one counts as empty.
func packageHookChange(before, after string) string {
	a, err := packageHookValues(after)
	if err != nil {
		return "it is a package.json that does not parse as JSON, so whether it changes what git hooks run cannot be told"
	}
	b, _ := packageHookValues(before)
	for _, k := range packageHookKeys {
		if !reflect.DeepEqual(a[k.key], b[k.key]) {
			return "it is package.json and the change touches " + k.key + ", which " + k.why
		}
	}
	return ""
}

// packageHookValues decodes the values of packageHookKeys in a package.json
// text; a key that is absent is absent from the map.
func packageHookValues(text string) (map[string]any, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &top); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range packageHookKeys {
		raw := top[k.key]
		if sub, ok := strings.CutPrefix(k.key, "config."); ok {
			var config map[string]json.RawMessage
			if json.Unmarshal(top["config"], &config) != nil {
				continue
			}
			raw = config[sub]
		}
		if raw == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		out[k.key] = v
	}
	return out, nil
}

// Reasons shared by several names.
const (
	whyGit        = "it is in .git (or is a .git file), where a hook or a setting such as core.fsmonitor makes git run a program"
	whyHookDir    = "it is in a git hook directory, whose scripts git runs as hooks when core.hooksPath points there"
	whyLefthook   = "it is lefthook's configuration or scripts, which lefthook runs on git hooks (commit, push, checkout)"
	whyLintStaged = "it is lint-staged's configuration, whose commands run on every commit"
	whyHusky      = "it is husky's configuration, whose commands run as git hooks"
	whyNanoStaged = "it is nano-staged's configuration, whose commands run on every commit"
	whyMise       = "it is mise's configuration, whose hooks, environment scripts and tools run on entering the directory"
	whyExrc       = "it is a Vim or Neovim exrc file, which the editor runs on starting in its directory when 'exrc' is set"
	whyEmacs      = "it is an Emacs .dir-locals file, which Emacs evaluates on opening a file below it"
	whyAgent      = "it is another coding agent's project settings, whose MCP servers and hooks run when that agent opens the folder"
	whyEnvFile    = "it is an .env file, which autoenv runs and direnv or shell plugins load on entering its directory"
	whyDevenv     = "it is devenv's configuration, whose shell hooks and git hooks run on entering the directory"
	whyGradle     = "it is the Gradle wrapper, which chooses and is the program ./gradlew and IDE sync run"
)

// protectedDirs are directory (or file) names that protect everything
// below them, compared folded.
var protectedDirs = map[string]string{
	".git":            whyGit,
	"git~1":           "it is in .git (here by its short Windows name), where a hook or a setting such as core.fsmonitor makes git run a program",
	".hg":             "it is in .hg, where a hook in .hg/hgrc makes Mercurial run a program",
	".jj":             "it is in .jj, where the repository's config names programs jj runs (diff and merge tools, fsmonitor)",
	".sl":             "it is in .sl, where a hook in Sapling's config makes it run a program",
	".svn":            "it is in .svn, Subversion's record of the working copy, which only svn should change",
	".husky":          "it is in .husky, whose scripts git runs as hooks",
	".githooks":       whyHookDir,
	".git-hooks":      whyHookDir,
	".lefthook":       whyLefthook,
	".lefthook-local": whyLefthook,
	".cargo-husky":    "it is in .cargo-husky, whose scripts cargo-husky installs as git hooks",
	".envrc":          "it is an .envrc file, which direnv runs on entering its directory",
	".direnv":         "it is in .direnv, direnv's files for the directory (the environment it activates on entering it)",
	".mise":           whyMise,
	".devenv":         "it is in .devenv, devenv's state for the shell it starts on entering the directory",
	".venv":           "it is in .venv, the Python environment editors run on opening the folder and shells activate on entering it",
	".vscode":         "it is in .vscode, where tasks (some run when the folder opens), launch configurations and settings make VS Code run programs",
	".zed":            "it is in .zed, where tasks and language-server settings make Zed run programs",
	".idea":           "it is in .idea, where run configurations, file watchers and tool settings make JetBrains IDEs run programs",
	".fleet":          "it is in .fleet, where run configurations and settings make Fleet run programs",
	".theia":          "it is in .theia, where tasks and settings make Theia run programs",
	".helix":          "it is in .helix, where languages.toml names the language servers Helix starts",
	".devcontainer":   "it is in .devcontainer, whose commands dev-container tools run (initializeCommand on this machine)",
	"node_modules":    "it is in node_modules, whose code language servers, editor extensions and hooks load and run",
	".claude":         whyAgent,
	".cursor":         whyAgent,
	".gemini":         whyAgent,
	".codex":          whyAgent,
	".kiro":           whyAgent,
	".continue":       whyAgent,
	".windsurf":       whyAgent,
	".cargo":          "it is in .cargo, whose config names programs cargo runs for every build and check (rustc-wrapper, linker, runner)",
	".yarn":           "it is in .yarn, whose release and plugins run as yarn itself",
	".mvn":            "it is in .mvn, whose wrapper settings and extensions choose what runs as Maven",
}

// protectedNames are whole file names, compared folded.
var protectedNames = map[string]string{
	".gitattributes":            "it is a .gitattributes file, which chooses the filter, diff and merge drivers git runs",
	".env":                      whyEnvFile,
	".env.leave":                whyEnvFile,
	".tool-versions":            "it is .tool-versions, whose entries (a path: among them) choose the programs asdf and mise run on entering the directory",
	"devbox.json":               "it is devbox.json, whose init hook runs when its shell starts, on entering the directory with direnv",
	"devenv.nix":                whyDevenv,
	"devenv.local.nix":          whyDevenv,
	"shell.nix":                 "it is shell.nix, whose shell hook runs on entering the directory with direnv",
	".devcontainer.json":        "it is .devcontainer.json, whose commands dev-container tools run (initializeCommand on this machine)",
	".mcp.json":                 whyAgent,
	".dir-locals.el":            whyEmacs,
	".dir-locals-2.el":          whyEmacs,
	".exrc":                     whyExrc,
	"_exrc":                     whyExrc,
	".vimrc":                    whyExrc,
	"_vimrc":                    whyExrc,
	".gvimrc":                   whyExrc,
	"_gvimrc":                   whyExrc,
	".nvimrc":                   whyExrc,
	".nvim.lua":                 whyExrc,
	".lazy.lua":                 "it is a .lazy.lua file, which lazy.nvim runs on starting Neovim in its directory",
	".lvimrc":                   "it is an .lvimrc file, which localvimrc runs on opening a file below it",
	"gradle-wrapper.properties": whyGradle,
	"gradle-wrapper.jar":        whyGradle,
}

// A family's forms: the spellings its tool reads.
const (
	formDot    = 1 << iota // only with the leading dot: .npmrc, never npmrc
	formBare               // no extension: .huskyrc
	formPlain              // base and extension: lefthook.yml
	formConfig             // "config" before the extension: lint-staged.config.js
	formAny                // any parts before the extension: mise.local.toml, .pnp.loader.mjs
	formData               // extension yml, yaml, json, jsonc, json5, toml, pkl
	formCode               // extension js, cjs, mjs, ts, cts, mts
)

var (
	dataExts = map[string]bool{"yml": true, "yaml": true, "json": true, "jsonc": true, "json5": true, "toml": true, "pkl": true}
	codeExts = map[string]bool{"js": true, "cjs": true, "mjs": true, "ts": true, "cts": true, "mts": true}
)

// family is a configuration file's base name: the forms its tool reads,
// and why it is protected.
type family struct {
	forms int
	why   string
}

// protectedFamilies are configuration files by base name, in the forms
// their tool reads; the leading dot is optional unless formDot says.
var protectedFamilies = map[string]family{
	"lefthook":          {formPlain | formData, whyLefthook},
	"lefthook-local":    {formPlain | formData, whyLefthook},
	"lintstagedrc":      {formDot | formBare | formPlain | formData | formCode, whyLintStaged},
	"lint-staged":       {formConfig | formData | formCode, whyLintStaged},
	"huskyrc":           {formDot | formBare | formPlain | formData | formCode, whyHusky},
	"husky":             {formConfig | formCode, whyHusky},
	"nano-staged":       {formPlain | formConfig | formData | formCode, whyNanoStaged},
	"nanostagedrc":      {formDot | formBare | formPlain | formData | formCode, whyNanoStaged},
	"simple-git-hooks":  {formPlain | formConfig | formData | formCode, "it is simple-git-hooks' configuration, whose commands it installs as git hooks"},
	"pre-commit-config": {formPlain | formData, "it is pre-commit's configuration, whose hooks pre-commit runs on every commit"},
	"overcommit":        {formDot | formPlain | formData, "it is overcommit's configuration, whose hooks run on git commands"},
	"captainhook":       {formPlain | formData, "it is CaptainHook's configuration, whose actions run as git hooks"},
	"grumphp":           {formPlain | formData, "it is GrumPHP's configuration, whose tasks run on every commit"},
	"rusty-hook":        {formPlain | formData, "it is rusty-hook's configuration, whose commands run as git hooks"},
	"hk":                {formPlain | formData, "it is hk's configuration, whose steps run as git hooks"},
	"mise":              {formPlain | formAny | formData, whyMise},
	"rtx":               {formPlain | formAny | formData, whyMise},
	"devenv":            {formPlain | formAny | formData, whyDevenv},
	"npmrc":             {formDot | formBare, "it is an .npmrc file, which names programs npm runs for every script and install (script-shell, node-options, git)"},
	"yarnrc":            {formDot | formBare | formPlain | formData, "it is a .yarnrc file, whose yarnPath and plugins run as yarn itself"},
	"pnpmfile":          {formDot | formPlain | formCode, "it is a .pnpmfile, whose hooks pnpm runs on every install"},
	"pnp":               {formDot | formPlain | formAny | formCode, "it is Yarn's Plug'n'Play loader, which every Node process yarn starts, and editors, load"},
	"rust-toolchain":    {formBare | formPlain | formData, "it is a rust-toolchain file, which chooses (by path, even) the toolchain every cargo and rustc command runs, editors' included"},
}

// protectedExts are extensions whose files configure a whole editor
// workspace when opened.
var protectedExts = map[string]string{
	"code-workspace":  "it is a VS Code workspace file, whose tasks and settings make VS Code run programs when it is opened",
	"sublime-project": "it is a Sublime Text project file, whose build systems and settings run programs when it is opened",
}

// protectedName says why the component c (folded) at comps[i] is
// protected, or "".
func protectedName(comps []string, i int) string {
	c := comps[i]
	if why, ok := protectedDirs[c]; ok {
		return why
	}
	if why, ok := protectedNames[c]; ok {
		return why
	}
	bare, dotted := strings.CutPrefix(c, ".")
	if bare == "mise" && miseReads(comps, i) {
		return whyMise
	}
	parts := strings.Split(bare, ".")
	base, exts := parts[0], parts[1:]
	if len(exts) > 0 && exts[len(exts)-1] == "dist" { // grumphp.yml.dist
		exts = exts[:len(exts)-1]
	}
	if len(exts) > 0 {
		if why, ok := protectedExts[exts[len(exts)-1]]; ok {
			return why
		}
	}
	if f, ok := protectedFamilies[base]; ok {
		return f.whyFor(dotted, exts)
	}
	return ""
}

// miseReads reports whether the directory called mise at comps[i] is one
// mise reads: mise/config.toml (and config.<env>.toml), mise/conf.d and
// all of .config/mise; a directory called mise elsewhere is an ordinary
// one.
func miseReads(comps []string, i int) bool {
	if i > 0 && comps[i-1] == ".config" {
		return true
	}
	if i+1 >= len(comps) {
		return false
	}
	next := comps[i+1]
	return strings.HasPrefix(next, "config.") && strings.HasSuffix(next, ".toml") || next == "conf.d"
}

// whyFor is why a name of family f is protected when it is one of f's
// forms, "" when it is not: dotted says the name starts with a dot, exts
// are its extensions (a last .dist dropped).
func (f family) whyFor(dotted bool, exts []string) string {
	if f.forms&formDot != 0 && !dotted {
		return ""
	}
	if len(exts) == 0 {
		if f.forms&formBare != 0 {
			return f.why
		}
		return ""
	}
	last, middle := exts[len(exts)-1], exts[:len(exts)-1]
	if !(f.forms&formData != 0 && dataExts[last] || f.forms&formCode != 0 && codeExts[last]) {
		return ""
	}
	switch {
	case len(middle) == 0 && f.forms&formPlain != 0,
		len(middle) > 0 && f.forms&formAny != 0,
		len(middle) == 1 && middle[0] == "config" && f.forms&formConfig != 0:
		return f.why
	}
	return ""
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
	comps := splitPath(rel)
	for i, c := range comps {
		comps[i] = foldName(c)
	}
	for i := range comps {
		if why := protectedName(comps, i); why != "" {
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

package tools

import (
	"cmp"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// What core.hooksPath names is protected wherever it points: the hook
// directory names Protected knows are conventions, and a repository may
// keep its hooks in scripts/hooks instead.

const (
	// maxGitConfigBytes bounds how much of a repository's config is read.
	maxGitConfigBytes = 256 << 10
	// maxGitSearch bounds the directories searched upward for a .git.
	maxGitSearch = 256
)

// gitHookNames are the hooks git runs from its hooks directory.
var gitHookNames = map[string]bool{
	"applypatch-msg": true, "pre-applypatch": true, "post-applypatch": true, "pre-commit": true,
	"pre-merge-commit": true, "prepare-commit-msg": true, "commit-msg": true, "post-commit": true,
	"pre-rebase": true, "post-checkout": true, "post-merge": true, "pre-push": true, "pre-receive": true,
	"update": true, "proc-receive": true, "post-receive": true, "post-update": true,
	"reference-transaction": true, "push-to-checkout": true, "pre-auto-gc": true, "post-rewrite": true,
	"sendemail-validate": true, "fsmonitor-watchman": true, "p4-changelist": true,
	"p4-prepare-changelist": true, "p4-post-changelist": true, "p4-pre-submit": true, "post-index-change": true,
}

const whyHooksPath = "it is in the directory core.hooksPath names in this repository's git config, whose scripts git runs as hooks"

// protectedHooksPath says why p, a clean absolute path, is protected by a
// core.hooksPath of a repository holding it, or "". Every repository from
// p's directory up counts (a submodule's and the one around it): a commit
// in either runs its hooks. Below a hooks directory that lies inside its
// working tree everything is protected, as the hooks call scripts beside
// them; a hooks directory that is the working tree or above it protects
// only the hook names directly in it.
func protectedHooksPath(p string) string {
	dir := filepath.Dir(p)
	for range maxGitSearch {
		if hooks, ok := hooksPathOf(dir); ok {
			real, err := resolveLenient(hooks)
			if err != nil {
				real = hooks
			}
			for _, h := range []string{hooks, real} {
				inside := withinFolded(dir, h) && len(splitPath(h)) > len(splitPath(dir))
				if inside && withinFolded(h, p) ||
					!inside && sameFolded(h, filepath.Dir(p)) && gitHookNames[foldName(filepath.Base(p))] {
					return whyHooksPath
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// withinFolded is within, comparing components as foldName folds them.
func withinFolded(root, p string) bool {
	r, q := splitPath(root), splitPath(p)
	if len(q) < len(r) {
		return false
	}
	for i := range r {
		if foldName(r[i]) != foldName(q[i]) {
			return false
		}
	}
	return true
}

func sameFolded(a, b string) bool {
	return withinFolded(a, b) && len(splitPath(a)) == len(splitPath(b))
}

// hooksPathOf returns the directory core.hooksPath names for the working
// tree at dir, made absolute, when dir holds a .git (a directory, or a
// worktree's or submodule's .git file) whose config sets it, or the
// system or global config does. As git does, the system config is read
// first, then the global ones, then a linked worktree's common config, then
// its own; the last value holds. Include directives are not followed.
func hooksPathOf(dir string) (string, bool) {
	gitdir := filepath.Join(dir, ".git")
	fi, err := os.Stat(gitdir) // a .git may be a link to the directory
	if err != nil {
		return "", false
	}
	if fi.Mode().IsRegular() {
		text, err := readSmall(gitdir, 4096)
		line, _, _ := strings.Cut(text, "\n")
		target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if err != nil || !ok {
			return "", false
		}
		gitdir = absClean(dir, strings.TrimSpace(target))
	} else if !fi.IsDir() {
		return "", false
	}
	configs := []string{filepath.Join(gitdir, "config")}
	if common, err := readSmall(filepath.Join(gitdir, "commondir"), 4096); err == nil && strings.TrimSpace(common) != "" {
		configs = []string{filepath.Join(absClean(gitdir, strings.TrimSpace(common)), "config"), configs[0]}
	}
	// Git reads the system and global configs first: a hooksPath set there
	// (often relative, ".githooks", so every repository's own directory of
	// that name) holds unless the repository sets its own.
	configs = append(outerGitConfigs(), configs...)
	value, found := "", false
	for _, c := range configs {
		text, err := readSmall(c, maxGitConfigBytes)
		if err != nil {
			continue
		}
		if v, ok := gitConfigHooksPath(text); ok {
			value, found = v, true
		}
	}
	if !found || value == "" {
		return "", false
	}
	if rest, ok := strings.CutPrefix(value, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		return absClean(home, rest), true
	}
	return absClean(dir, value), true
}

// readSmall reads at most limit bytes of a regular file, never blocking on
// a FIFO or a device.
func readSmall(path string, limit int64) (string, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, _, err := openRegular(root, filepath.Base(path))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	return string(b), err
}

// gitConfigHooksPath returns the last core.hooksPath set in a git config
// text. Section and key names are case-insensitive; the value may be
// quoted, with git's escapes, and followed by a comment.
func gitConfigHooksPath(text string) (string, bool) {
	section, value, found := "", "", false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				section = ""
				continue
			}
			section = strings.ToLower(strings.TrimSpace(line[1:end]))
			line = strings.TrimSpace(line[end+1:]) // "[core] hooksPath = x" is one line
		}
		key, v, ok := strings.Cut(line, "=")
		if section != "core" || !ok || !strings.EqualFold(strings.TrimSpace(key), "hookspath") {
			continue
		}
		value, found = gitConfigValue(v), true
	}
	return value, found
}

// gitConfigValue decodes a git config value: quotes removed, escapes
// taken, a comment outside quotes dropped, space outside quotes trimmed at
// the ends.
func gitConfigValue(v string) string {
	var b strings.Builder
	quoted, pending := false, ""
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteString(pending)
			pending = ""
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(v[i])
			}
		case c == '"':
			quoted = !quoted
		case !quoted && (c == '#' || c == ';'):
			return b.String()
		case !quoted && (c == ' ' || c == '\t'):
			if b.Len() > 0 {
				pending += string(c)
			}
		default:
			b.WriteString(pending)
			pending = ""
			b.WriteByte(c)
		}
	}
	return b.String()
}

// outerGitConfigs are the config files git reads before a repository's, in
// its order: the system config (GIT_CONFIG_SYSTEM, else /etc/gitconfig;
// none with GIT_CONFIG_NOSYSTEM), then the global ones (GIT_CONFIG_GLOBAL
// alone when set, else $XDG_CONFIG_HOME/git/config and ~/.gitconfig).
func outerGitConfigs() []string {
	var out []string
	if !gitBool(os.Getenv("GIT_CONFIG_NOSYSTEM")) {
		out = append(out, cmp.Or(os.Getenv("GIT_CONFIG_SYSTEM"), "/etc/gitconfig"))
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(out, g)
	}
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	return out
}

// gitBool reads a boolean as git does for GIT_CONFIG_NOSYSTEM.
func gitBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

package tools

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// protectedNameBefore is protectedName as it was before its family forms
// and mise's directory were named, kept while the refactor is checked
// against it.
func protectedNameBefore(comps []string, i int) string {
	c := comps[i]
	if why, ok := protectedDirs[c]; ok {
		return why
	}
	if why, ok := protectedNames[c]; ok {
		return why
	}
	bare, dotted := strings.CutPrefix(c, ".")
	// mise reads mise/config.toml (and config.<env>.toml), mise/conf.d and
	// all of .config/mise; a directory called mise elsewhere is an ordinary
	// one.
	if bare == "mise" && (i > 0 && comps[i-1] == ".config" || i+1 < len(comps) &&
		(strings.HasPrefix(comps[i+1], "config.") && strings.HasSuffix(comps[i+1], ".toml") || comps[i+1] == "conf.d")) {
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
	f, ok := protectedFamilies[base]
	if !ok || f.forms&formDot != 0 && !dotted {
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

// protectedName says what it did before its refactor of generated paths:
// every family's base, with and without its dot, with extensions data,
// code, config, several, .dist and none, editor workspaces, mise's
// directories where mise reads them and elsewhere, and the names and
// directories protected whole.
func TestProtectedName_SameAsBefore(t *testing.T) {
	bases := slices.Sorted(maps.Keys(protectedFamilies))
	bases = append(bases, slices.Sorted(maps.Keys(protectedNames))...)
	bases = append(bases, slices.Sorted(maps.Keys(protectedDirs))...)
	bases = append(bases, "readme", "config", "conf.d", ".config", "src", "x")
	exts := []string{"yml", "yaml", "json", "toml", "js", "mts", "config", "local", "dist", "txt", "code-workspace", "sublime-project", "d", ""}
	r := rand.New(rand.NewPCG(30, 11))
	comp := func() string {
		c := bases[r.IntN(len(bases))]
		if r.IntN(2) == 0 && !strings.HasPrefix(c, ".") {
			c = "." + c
		}
		for range r.IntN(4) {
			c += "." + exts[r.IntN(len(exts))]
		}
		return c
	}
	for range 100000 {
		comps := make([]string, 1+r.IntN(4))
		for i := range comps {
			comps[i] = comp()
		}
		for i := range comps {
			if got, want := protectedName(comps, i), protectedNameBefore(comps, i); got != want {
				t.Fatalf("protectedName(%q, %d) = %q; before %q", comps, i, got, want)
			}
		}
	}
}

package config_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// genConfig writes a random config file: comments, blank lines, the
// tables Rebound reads and others, values of every shape (strings holding
// # [ ] = and quotes, multi-line arrays and strings whose lines look like
// headers and keys), and the provider keys set or not.
func genConfig(r *rand.Rand) string {
	var b strings.Builder
	comment := func() {
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "%s# note %d: [provider] model = \"x\"\n", strings.Repeat(" ", r.IntN(3)), r.IntN(100))
		}
		if r.IntN(4) == 0 {
			b.WriteString("\n")
		}
	}
	values := []string{
		`"plain"`, `"with # hash and [brackets] and \"quotes\""`, `'literal # [x]'`, `42`, `true`,
		"[\n  \"a\",\n  \"[provider]\", # c\n]", "\"\"\"\nmodel = \"not a key\"\n[provider]\n\"\"\"",
		"'''\n[recovery]\nbase_url = 'no'\n'''", `{ a = "b", c = [1, 2] }`,
	}
	key := func(k string) {
		comment()
		trail := ""
		if r.IntN(3) == 0 {
			trail = " # why " + k
		}
		fmt.Fprintf(&b, "%s%s = %s%s\n", strings.Repeat(" ", r.IntN(2)), k, values[r.IntN(len(values))], trail)
	}
	providerVal := func(k string) {
		comment()
		trail := ""
		if r.IntN(2) == 0 {
			trail = "  # chosen " + k
		}
		v := []string{`"old"`, `'old'`, "\"\"\"\nold\"\"\"", `"old # not a comment"`}[r.IntN(4)]
		fmt.Fprintf(&b, "%s = %s%s\n", k, v, trail)
	}
	if r.IntN(2) == 0 {
		key("log_level_x")
	}
	tables := r.Perm(4)
	for _, t := range tables {
		comment()
		switch t {
		case 0:
			b.WriteString([]string{"[provider]", "[ provider ]", `["provider"]`, "[provider] # the model"}[r.IntN(4)] + "\n")
			for _, k := range []string{"base_url", "model", "api_key_env", "other", "models"} {
				switch {
				case k == "other" || k == "models":
					if r.IntN(2) == 0 {
						key(k)
					}
				case r.IntN(2) == 0:
					providerVal(k)
				}
			}
		case 1:
			b.WriteString("[provider.headers]\n")
			key(`"X-Gateway-Key"`)
		case 2:
			b.WriteString("[recovery]\n")
			key("max_retries")
			key("model")
		case 3:
			b.WriteString("[[recovery.rules]]\n")
			key("match")
		}
	}
	comment()
	return b.String()
}

// The edit keeps every other key and every comment of generated files,
// and sets the keys asked.
func TestSetProviderKeys_KeepsEverythingElse(t *testing.T) {
	set := map[string]string{"base_url": "https://api.deepseek.com/v1", "model": "deepseek-chat", "api_key_env": "DEEPSEEK_API_KEY"}
	dir := t.TempDir()
	for seed := range uint64(testkit.Cases(500, 100)) { // each seed also waits for an fsync
		r := rand.New(rand.NewPCG(seed, 34))
		text := genConfig(r)
		var before map[string]any
		if _, err := toml.Decode(text, &before); err != nil {
			t.Fatalf("seed %d: the generator wrote bad TOML: %v\n%s", seed, err, text)
		}
		path := filepath.Join(dir, fmt.Sprintf("c%d.toml", seed))
		os.WriteFile(path, []byte(text), 0o600)
		if err := config.SetProviderKeys(path, set); err != nil {
			t.Fatalf("seed %d: SetProviderKeys() = %v\n%s", seed, err, text)
		}
		out, _ := os.ReadFile(path)
		var after map[string]any
		if _, err := toml.Decode(string(out), &after); err != nil {
			t.Fatalf("seed %d: the result does not parse: %v\n%s", seed, err, out)
		}
		want := maps.Clone(before)
		p, _ := want["provider"].(map[string]any)
		p = maps.Clone(p)
		if p == nil {
			p = map[string]any{}
		}
		for k, v := range set {
			p[k] = v
		}
		want["provider"] = p
		if !reflect.DeepEqual(after, want) {
			t.Fatalf("seed %d: settings after the edit:\n%v\nwant\n%v\nfile before:\n%s\nafter:\n%s", seed, after, want, text, out)
		}
		// Every comment stays, in order (a replaced line keeps its own).
		var comments []string
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				comments = append(comments, l)
			}
		}
		outLines := strings.Split(string(out), "\n")
		i := 0
		for _, l := range outLines {
			if i < len(comments) && l == comments[i] {
				i++
			}
		}
		if i < len(comments) {
			t.Fatalf("seed %d: comment %q was lost:\nbefore:\n%s\nafter:\n%s", seed, comments[i], text, out)
		}
		for _, k := range []string{"base_url", "model", "api_key_env"} {
			if c := "# chosen " + k; strings.Contains(text, c) && !strings.Contains(string(out), c) {
				t.Fatalf("seed %d: the trailing comment of provider.%s was lost:\n%s", seed, k, out)
			}
		}
	}
}

func TestSetProviderKeys_NewFileAndRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rebound", "config.toml")
	if err := config.SetProviderKeys(path, map[string]string{"model": "m"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "[provider]\nmodel = \"m\"\n" {
		t.Errorf("new file = %q", got)
	}
	// provider set as dotted keys or an inline table: a [provider] table
	// cannot be added, and the file is left as it was.
	for _, text := range []string{"provider.model = \"x\"\n", "provider = { model = \"x\" }\n", "provider.headers.X = \"y\"\n"} {
		os.WriteFile(path, []byte(text), 0o600)
		err := config.SetProviderKeys(path, map[string]string{"model": "m", "base_url": "http://localhost:11434/v1"})
		if err == nil || !strings.Contains(err.Error(), "model = \"m\"") || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: SetProviderKeys() = %v, want an error with the lines to add", text, err)
		}
		if got, _ := os.ReadFile(path); string(got) != text {
			t.Errorf("%q: the file was changed to %q", text, got)
		}
	}
}

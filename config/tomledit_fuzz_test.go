package config

import (
	"strings"
	"testing"
)

// FuzzEditProvider: on any text, the edit does not panic, and an edit
// that passes its own check (the settings) kept every comment line too.
func FuzzEditProvider(f *testing.F) {
	for _, s := range []string{
		"", "[provider]\nmodel = \"x\" # c\n", "# top\n[provider.headers]\nA = 'b'\n[provider]\nbase_url = '''\nx'''\n",
		"models = [\n\"[provider]\",\n]\n[provider]\n", "provider.model = \"x\"\n", "a = \"\"\"\n[provider]\nmodel = 1\n\"\"\"\n",
		"[ \"provider\" ] # t\n\tmodel='m'#c\n",
	} {
		f.Add(s)
	}
	set := map[string]string{"base_url": "http://localhost:1234/v1", "model": "m-1", "api_key_env": "K"}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		edited, err := editProvider([]byte(text), set)
		if err != nil || checkEdit([]byte(text), edited, set) != nil {
			return
		}
		out := strings.Split(string(edited), "\n")
		i := 0
		lines := strings.Split(text, "\n")
		starts := statementStarts(lines) // a "# …" inside a string is no comment
		for k, l := range lines {
			if !starts[k] || !strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			for i < len(out) && out[i] != l {
				i++
			}
			if i == len(out) {
				t.Fatalf("comment %q lost:\n%s\n---\n%s", l, text, edited)
			}
			i++
		}
	})
}

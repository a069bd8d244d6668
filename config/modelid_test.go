package config_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
)

// genModelID makes an id a user or a careless script could set: a model
// name, now and then with a piece that is no part of one (a control
// character, an escape sequence, a bidi override, a space, an invalid
// byte, markdown), and of any length, from empty to 100 KB.
func genModelID(r *rand.Rand) string {
	const name = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@"
	pieces := []string{"\x00", "\x1b[31m", "\n", "\t", " ", "\u202e", "\u200b", "\x7f", "\xff", "\ufffd", "é", "模型", "[x](http://x)", "\u0085"}
	n := []int{0, 1, 5, 40, 199, 200, 201, 1000, 100 << 10}[r.IntN(9)]
	var b strings.Builder
	for b.Len() < n {
		if r.IntN(50) == 0 {
			b.WriteString(pieces[r.IntN(len(pieces))])
		} else {
			b.WriteByte(name[r.IntN(len(name))])
		}
	}
	return b.String()
}

// Every model id from configuration (--model, REBOUND_MODEL, provider.model
// in the file, provider.models, recovery.fallback_model) is held to the
// rule a provider's listed ids are (llm.CheckModelID, CleanModelIDs): one
// that fails it stops the start with an error naming its key and where it
// was set, short and inert (the value is quoted and cut); one that passes
// is taken as it is.
func TestLoad_ModelIDsFollowTheProvidersRule(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for i := range testkit.Cases(300, 60) {
		id := genModelID(r)
		valid := llm.CheckModelID(id) == nil
		if kept := len(llm.CleanModelIDs([]string{id})) == 1; kept != valid {
			t.Fatalf("CleanModelIDs keeps %q: %v, CheckModelID says %v", id, kept, valid)
		}
		type source struct {
			where, key string
			load       func() (config.Config, error)
			got        func(config.Config) string
		}
		model := func(c config.Config) string { return c.Provider.Model }
		sources := []source{
			{"--model", "provider.model", func() (config.Config, error) {
				return config.Load(config.Flags{Model: &id}, env{}.get, dir)
			}, model},
		}
		if id != "" { // an empty variable is unset
			sources = append(sources, source{config.EnvModel, "provider.model", func() (config.Config, error) {
				return config.Load(config.Flags{}, env{config.EnvModel: id}.get, dir)
			}, model})
		}
		file := func(key, line string, got func(config.Config) string) source {
			b, err := toml.Marshal(map[string]any{"v": id})
			if err != nil {
				t.Fatal(err)
			}
			v := strings.TrimPrefix(strings.TrimSpace(string(b)), "v = ")
			path := writeFile(t, dir, fmt.Sprintf("c%d.toml", i), fmt.Sprintf(line, v))
			return source{path, key, func() (config.Config, error) {
				return config.Load(config.Flags{ConfigPath: &path}, env{}.get, dir)
			}, got}
		}
		if strings.ToValidUTF8(id, "") == id { // a TOML file is UTF-8
			switch i % 3 {
			case 0:
				sources = append(sources, file("provider.model", "[provider]\nmodel = %s\n", model))
			case 1:
				sources = append(sources, file("provider.models[0]", "[provider]\nmodels = [%s]\n",
					func(c config.Config) string { return c.Provider.Models[0] }))
			case 2:
				sources = append(sources, file("recovery.fallback_model", "[recovery]\nfallback_model = %s\n",
					func(c config.Config) string { return c.Recovery.FallbackModel }))
			}
		}
		for _, s := range sources {
			cfg, err := s.load()
			switch {
			case valid && err != nil:
				t.Fatalf("%s %q: %v", s.where, id, err)
			case valid && s.got(cfg) != id:
				t.Fatalf("%s %q: read as %q", s.where, id, s.got(cfg))
			case !valid && err == nil && !(s.key == "recovery.fallback_model" && id == ""):
				t.Fatalf("%s %q (%d bytes) is taken", s.where, clipID(id), len(id))
			case err != nil:
				msg := err.Error()
				if !strings.Contains(msg, s.where) || !strings.Contains(msg, s.key) || len(msg) > 600 ||
					strings.ContainsFunc(msg, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
					t.Fatalf("%s %q: the error is %q, want %s and %s named, short and inert", s.where, clipID(id), clipID(msg), s.where, s.key)
				}
			}
		}
	}
}

func clipID(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

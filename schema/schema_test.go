package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/schema"
	"github.com/rebound-agent/rebound/schema/generate"

	"github.com/rebound-agent/rebound/internal/golden"
)

var update = golden.Update

// The checked-in (and embedded) schemas must be what the Go types generate
// today.
func TestSchemas_Fresh(t *testing.T) {
	embedded, err := schema.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(embedded) != len(generate.All()) {
		t.Errorf("%d schemas embedded, %d generated", len(embedded), len(generate.All()))
	}
	for name, s := range generate.All() {
		got, err := generate.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := golden.Write(name, got); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v (run `go test ./schema -update`)", err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s is stale; run `go test ./schema -update` (-want +got):\n%s", name, diff)
		}
	}
}

func compile(t *testing.T, name string) *validator.Schema {
	t.Helper()
	c := validator.NewCompiler()
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return s
}

func tomlAsJSON(t *testing.T, src string) any {
	t.Helper()
	var m map[string]any
	if _, err := toml.Decode(src, &m); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	v, err := validator.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestConfigSchema_Validates(t *testing.T) {
	s := compile(t, "config.schema.json")
	example, err := os.ReadFile(filepath.Join("..", "testdata", "config", "example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defaults, _ := json.Marshal(config.Default())
	tests := []struct {
		name, src string
		ok        bool
	}{
		{"example", string(example), true},
		{"empty file", "", true},
		{"unknown key", "[provider]\nmodle = \"x\"\n", false},
		{"bad duration", "[recovery]\nmax_delay = \"5 parsecs\"\n", false},
		{"bad code", "[recovery]\nretryable_codes = [\"NOPE\"]\n", false},
		{"negative max_tokens", "[provider]\nmax_tokens = -5\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(tomlAsJSON(t, tt.src))
			if (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		// Default() as JSON uses the same key names and value forms as the file.
		var v map[string]any
		json.Unmarshal(defaults, &v)
		delete(v, "state_dir") // empty until resolved; the schema wants a path
		b, _ := json.Marshal(v)
		doc, _ := validator.UnmarshalJSON(bytes.NewReader(b))
		if err := s.Validate(doc); err != nil {
			t.Errorf("defaults do not validate: %v", err)
		}
	})
}

func TestSessionEventSchema_ValidatesLogs(t *testing.T) {
	s := compile(t, "session-event.schema.json")
	logs, _ := filepath.Glob(filepath.Join("..", "session", "testdata", "*.jsonl"))
	if len(logs) == 0 {
		t.Fatal("no session logs to validate")
	}
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			v, err := validator.UnmarshalJSON(strings.NewReader(line))
			if err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("%s:%d: %v", path, i+1, err)
			}
		}
	}
	bad := `{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/start","data":{"turn":"one"}}`
	v, _ := validator.UnmarshalJSON(strings.NewReader(bad))
	if s.Validate(v) == nil {
		t.Error("a turn/start with a string turn validated")
	}
	unknown := `{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/explode","data":{}}`
	v, _ = validator.UnmarshalJSON(strings.NewReader(unknown))
	if s.Validate(v) == nil {
		t.Error("an unknown event type validated")
	}
}

// The README's configuration reference must name every key of the config
// file, as generated from the Go types: a key added to the types without
// documentation fails here.
func TestConfigSchema_DocumentedInREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	var keys []string
	var walk func(prefix string, s *jsonschema.Schema)
	walk = func(prefix string, s *jsonschema.Schema) {
		if s.Items != nil && s.Items.Properties != nil {
			s = s.Items
		}
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			key := prefix + pair.Key
			child := pair.Value
			if child.Properties != nil || (child.Items != nil && child.Items.Properties != nil) {
				walk(key+".", child)
				continue
			}
			keys = append(keys, key)
		}
	}
	walk("", generate.Config())
	if len(keys) < 20 {
		t.Fatalf("found only %d keys in the config schema", len(keys))
	}
	for _, key := range keys {
		short := strings.TrimPrefix(key, "recovery.")
		last := key[strings.LastIndex(key, ".")+1:]
		if strings.Contains(doc, "`"+key+"`") || strings.Contains(doc, "`"+short+"`") ||
			(strings.HasPrefix(key, "recovery.rules.") && strings.Contains(doc, "\n"+last+" = ")) {
			continue
		}
		t.Errorf("README.md does not document config key %s", key)
	}
}

// TestConfigSchema_DefaultsAreTheDefaults: a default stated in the schema
// (what editors show and complete) is the value config.Default has, so the
// two cannot drift apart.
func TestConfigSchema_DefaultsAreTheDefaults(t *testing.T) {
	b, err := json.Marshal(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := json.Unmarshal(b, &defaults); err != nil {
		t.Fatal(err)
	}
	checked := 0
	var walk func(prefix string, s *jsonschema.Schema, values map[string]any)
	walk = func(prefix string, s *jsonschema.Schema, values map[string]any) {
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			key, child := prefix+pair.Key, pair.Value
			if child.Properties != nil {
				sub, _ := values[pair.Key].(map[string]any)
				walk(key+".", child, sub)
				continue
			}
			if child.Default == nil {
				continue
			}
			checked++
			want, _ := json.Marshal(child.Default)
			got, _ := json.Marshal(values[pair.Key])
			if string(want) != string(got) {
				t.Errorf("%s: the schema's default is %s, config.Default() has %s", key, want, got)
			}
		}
	}
	walk("", generate.Config(), defaults)
	if checked < 10 {
		t.Fatalf("only %d defaults checked", checked)
	}
}

// TestFailureCodes_EverywhereTheyMustBe: recovery.Codes is the one list of
// failure codes; every place that spells them out must name each one, so a
// code added to recovery fails here until it is documented, configurable,
// in the schemas and coloured in the inspect page (whose legend ranges over
// recovery.Codes itself).
func TestFailureCodes_EverywhereTheyMustBe(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	places := map[string]string{
		"config.schema.json (retryable_codes enum)":  read("schema/config.schema.json"),
		"retry-progress.schema.json":                 read("schema/retry-progress.schema.json"),
		"README.md":                                  read("README.md"),
		"inspect/page.html.tmpl (a colour per code)": read("inspect/page.html.tmpl"),
	}
	for _, c := range recovery.Codes {
		for where, text := range places {
			want := `"` + string(c) + `"`
			switch {
			case strings.HasPrefix(where, "README"):
				want = "`" + string(c) + "`"
			case strings.HasPrefix(where, "inspect/page"):
				want = ".c-" + string(c) + "{"
			}
			if !strings.Contains(text, want) {
				t.Errorf("failure code %s is missing from %s (looked for %s)", c, where, want)
			}
		}
	}
}

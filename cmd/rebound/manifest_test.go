package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rebound-agent/rebound/acp"
)

// agentManifest is the part of agent.json the test reads.
type agentManifest struct {
	ID           string `json:"id"`
	Version      string `json:"version"`
	Distribution struct {
		Binary map[string]struct {
			Archive string            `json:"archive"`
			Cmd     string            `json:"cmd"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"binary"`
	} `json:"distribution"`
}

// TestAgentManifest keeps agent.json, the manifest the ACP agent registry
// lists Rebound by, valid for the registry and in step with the release:
// its version is the one the binary reports for a release build, and every
// download is of that release.
func TestAgentManifest(t *testing.T) {
	path := filepath.Join("..", "..", "agent.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	schemaFile, err := os.Open(filepath.Join("..", "..", "testdata", "registry", "agent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer schemaFile.Close()
	doc, err := jsonschema.UnmarshalJSON(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("agent.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("agent.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("agent.json is not JSON: %v", err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Errorf("agent.json does not match the registry's schema: %v", err)
	}

	var m agentManifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.ID != acp.AgentName {
		t.Errorf("id = %q, want %q (agentInfo.name)", m.ID, acp.AgentName)
	}
	if m.Version != release {
		t.Errorf("agent.json version = %q, but the release is %q (cmd/rebound/run.go): bump both together", m.Version, release)
	}
	// The registry's CI: every OS has a build, and each URL names the
	// version and never /latest/.
	var oses []string
	for target, b := range m.Distribution.Binary {
		os, _, _ := strings.Cut(target, "-")
		if !slices.Contains(oses, os) {
			oses = append(oses, os)
		}
		if !strings.Contains(b.Archive, "/download/v"+release+"/") || strings.Contains(b.Archive, "/latest/") {
			t.Errorf("%s: archive %s is not of release v%s", target, b.Archive, release)
		}
		if want := "./rebound"; os == "windows" {
			want += ".exe"
			if b.Cmd != want {
				t.Errorf("%s: cmd = %q, want %q", target, b.Cmd, want)
			}
		} else if b.Cmd != want {
			t.Errorf("%s: cmd = %q, want %q", target, b.Cmd, want)
		}
		// The terminal sign-in appends its args ("login") to this command:
		// a subcommand here would make it `rebound serve login`.
		if len(b.Args) != 0 {
			t.Errorf("%s: args = %q; Rebound serves with none, and the terminal sign-in appends its own", target, b.Args)
		}
	}
	slices.Sort(oses)
	if !slices.Equal(oses, []string{"darwin", "linux", "windows"}) {
		t.Errorf("builds for %v; the registry wants darwin, linux and windows", oses)
	}
}

// version reports the release with a -dev suffix when not built from the
// release's tag (as in tests), which the golden transcripts normalise.
func TestVersion_Dev(t *testing.T) {
	if v := version(); !regexp.MustCompile(`^` + regexp.QuoteMeta(release) + `-dev(\+[0-9a-f]{12})?$`).MatchString(v) {
		t.Errorf("version() = %q, want %s-dev, maybe with +REVISION", v, release)
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	rel "github.com/rebound-agent/rebound/internal/release"
)

// TestAgentManifest keeps agent.json, the manifest the ACP agent registry
// lists Rebound by, valid for the registry (the checks of its CI that need
// no network, internal/release) and in step with the release: its version
// is the one the binary reports for a release build, every download is of
// that release's archive for its platform, it survives the registry's
// automatic version bumps (rel.CheckBump), and icon.svg passes.
func TestAgentManifest(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	schema, err := rel.LoadSchema(filepath.Join(root, "testdata", "registry", "agent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The registry's entry directory is named by the id, which is also
	// agentInfo.name.
	for _, err := range rel.CheckManifest(data, acp.AgentName, schema) {
		t.Errorf("agent.json: %v", err)
	}
	icon, err := os.ReadFile(filepath.Join(root, "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range rel.CheckIcon(icon) {
		t.Errorf("icon.svg: %v", err)
	}

	m, err := rel.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != release {
		t.Errorf("agent.json version = %q, but the release is %q (cmd/rebound/run.go): bump both together", m.Version, release)
	}
	if len(m.Distribution.Binary) != len(rel.Targets) {
		t.Errorf("agent.json downloads for %d platforms, the release builds %d", len(m.Distribution.Binary), len(rel.Targets))
	}
	for _, target := range rel.Targets {
		b, ok := m.Distribution.Binary[target.Platform]
		if !ok {
			t.Errorf("%s: no download", target.Platform)
			continue
		}
		if want := rel.ReleaseURL(m.Repository, release, target); b.Archive != want {
			t.Errorf("%s: archive = %s, want %s (what scripts/release builds)", target.Platform, b.Archive, want)
		}
		if b.Cmd != target.Cmd() {
			t.Errorf("%s: cmd = %q, want %q", target.Platform, b.Cmd, target.Cmd())
		}
		// The terminal sign-in appends its args ("login") to this command:
		// a subcommand here would make it `rebound serve login`.
		if len(b.Args) != 0 {
			t.Errorf("%s: args = %q; Rebound serves with none, and the terminal sign-in appends its own", target.Platform, b.Args)
		}
	}
	// The registry's hourly updater will bump the listing to each new
	// release by rewriting its URLs: they must still name the archives,
	// and no sha256 may be carried over stale.
	for _, err := range rel.CheckBump(data, acp.AgentName, schema) {
		t.Errorf("agent.json: %v", err)
	}
}

// version reports the release with a -dev suffix when not built from the
// release's tag (as in tests), which the golden transcripts normalise.
func TestVersion_Dev(t *testing.T) {
	if v := version(); !regexp.MustCompile(`^` + regexp.QuoteMeta(release) + `-dev(\+[0-9a-f]{12})?$`).MatchString(v) {
		t.Errorf("version() = %q, want %s-dev, maybe with +REVISION", v, release)
	}
}

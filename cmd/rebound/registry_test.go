package main

import (
	"slices"
	"testing"
	"time"

	rel "github.com/rebound-agent/rebound/internal/release"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// The registry's CI starts the binary twice (internal/release has the
// details): once for a raw initialize in a bare environment, which must
// list a sign-in method of type agent or terminal, and once with stdin
// closed, which must not fail. Its initialize carries terminal auth only
// in _meta (the shape clients used before terminal methods were in the
// protocol), so it is offered the terminal method in that shape too: an
// agent method whose _meta["terminal-auth"] is the command, which the
// validator reads as type terminal.
func TestRegistry_AuthCheck(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	l := rel.Launch{Path: testkit.ReboundBinary(t), Dir: t.TempDir()}
	res, err := rel.AuthCheck(t.Context(), l, t.TempDir(), rel.AuthTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if want := []rel.AuthMethod{{ID: "api-key", Type: "agent"}, {ID: "terminal-login", Type: "terminal"}}; !slices.Equal(res.Methods, want) {
		t.Errorf("authMethods = %v, want %v", res.Methods, want)
	}
	if res.AgentName != "rebound" {
		t.Errorf("agentInfo.name = %q", res.AgentName)
	}
}

func TestRegistry_LaunchCheck(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	home := t.TempDir()
	l := rel.Launch{Path: testkit.ReboundBinary(t), Dir: t.TempDir(), Env: map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": home, "XDG_STATE_HOME": home,
	}}
	start := time.Now()
	if err := rel.LaunchCheck(t.Context(), l, rel.LaunchTimeout); err != nil {
		t.Fatal(err)
	}
	// Rebound stops at the end of its input; waiting out the whole time
	// would also pass, but would mean it hangs with no client.
	if d := time.Since(start); d >= rel.LaunchTimeout {
		t.Errorf("with stdin closed Rebound was still running after %v", d)
	}
}

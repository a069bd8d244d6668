package testkit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestReboundBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := ReboundBinary(t)
	if again := ReboundBinary(t); again != bin {
		t.Errorf("second ReboundBinary = %q, want the first build %q", again, bin)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(strings.ToLower(string(out)), "rebound") {
		t.Errorf("%s --version = %q, %v", bin, out, err)
	}
	getenv := DemoGetenv(t, map[string]string{"REBOUND_MODEL": "m"})
	if getenv("REBOUND_DEMO_CHILD") != bin || getenv("REBOUND_MODEL") != "m" || getenv("HOME") != "" {
		t.Errorf("DemoGetenv: child %q, model %q, HOME %q; want the binary, m and nothing else", getenv("REBOUND_DEMO_CHILD"), getenv("REBOUND_MODEL"), getenv("HOME"))
	}
	RemoveBinary()
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Errorf("after RemoveBinary, stat %s = %v; want not exist", bin, err)
	}
}

// Test helpers stay out of the shipped binary.
func TestNotInTheShippedBinary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/rebound-agent/rebound/cmd/rebound").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasSuffix(strings.TrimSpace(line), "/internal/testkit") {
			t.Errorf("cmd/rebound depends on %s", strings.TrimSpace(line))
		}
	}
}

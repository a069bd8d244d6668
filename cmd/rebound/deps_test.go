package main

import (
	"os/exec"
	"strings"
	"testing"
)

// keptOut are packages that must not be linked into the binary, each with
// why. Every package linked in runs its initialisation at each start, and an
// editor waits for that before `initialize` is answered (BENCHMARKS.md,
// start-up).
var keptOut = []struct{ prefix, why string }{
	{"github.com/go-git/", "go-git's gitignore package brought its config parser (encoding/gob's init), billy and os/user; agent/tools/ignore.go matches .gitignore instead"},
	{"os/user", "links libc's user lookup through cgo; came only with go-git"},
	{"github.com/invopop/jsonschema", "the schema generator is for tests and `go test -update`; the binary serves the checked-in schemas"},
	{"github.com/santhosh-tekuri/jsonschema", "the schema validator is for tests"},
}

func TestBinaryDeps_StartUpCostsStayOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v (no go command?)", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, k := range keptOut {
			if pkg == k.prefix || strings.HasPrefix(pkg, strings.TrimSuffix(k.prefix, "/")+"/") {
				t.Errorf("the rebound binary links %s: %s", pkg, k.why)
			}
		}
	}
}

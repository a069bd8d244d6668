package testkit

import (
	"fmt"
	"os"
	"strings"
)

// Gone reports whether pid has exited. An exited child of a dead parent stays
// a zombie until init reaps it, which a container's init may never do, so a
// zombie counts as gone.
func Gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name, which may itself
	// contain parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

//go:build !linux

package proc

// Only Linux has a child subreaper that Rebound can use.
func canReap() bool { return false }

func startReaped(c Cmd, name string, env []string) (*Process, error) {
	return startDirect(c, name, env)
}

//go:build !unix

package mcpmock

import "os/exec"

// detach: without sessions, a child is only a child.
func detach(*exec.Cmd) {}

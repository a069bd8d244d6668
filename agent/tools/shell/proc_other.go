//go:build !unix

package shell

import "os"

func exitStatus(ps *os.ProcessState) (*int, string) {
	if ps == nil || !ps.Exited() {
		return nil, ""
	}
	code := ps.ExitCode()
	return &code, ""
}

//go:build !unix

package regfile_test

import "testing"

const oNonblock = 0

func fcntlFlags(uintptr) (int, error) { return 0, nil }

func mkfifo(t *testing.T, _ string) { t.Skip("no FIFOs") }

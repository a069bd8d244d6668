//go:build !unix

package regfile_test

const oNonblock = 0

func fcntlFlags(uintptr) (int, error) { return 0, nil }

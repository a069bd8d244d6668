//go:build !race

package proc

// reaperEnv is the reaper's environment besides envReaper; see race_linux.go.
var reaperEnv []string

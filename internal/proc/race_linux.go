//go:build race

package proc

// reaperEnv is the reaper's environment besides envReaper. A race-enabled
// binary (a test binary built with -race) sleeps a second before it exits,
// to let reports be printed; a reaper has nothing to report.
var reaperEnv = []string{"GORACE=atexit_sleep_ms=0"}

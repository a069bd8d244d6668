//go:build race

package agent_test

// raceEnabled: under -race, tests that stream megabytes use less.
const raceEnabled = true

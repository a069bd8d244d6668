//go:build race

package agent_test

// raceEnabled: the race detector makes sync.Pool drop what it holds, so
// allocation totals mean nothing under -race.
const raceEnabled = true

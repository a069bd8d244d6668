//go:build !race

package testkit

// Race is whether the tests were built with -race: allocation bounds mean
// nothing under it (sync.Pool drops what it holds), and a test that only
// pushes megabytes through single-threaded code costs ten times as much
// there and finds nothing the run without it does not (.ci/run has both).
const Race = false

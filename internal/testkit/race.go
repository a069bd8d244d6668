//go:build race

package testkit

// Race is whether the tests were built with -race.
const Race = true

package testkit

// Cases is a property test's count of generated cases: n, or raceN when
// the tests were built with -race. The detector makes this single-goroutine
// work (parsers, classifiers, text edits) five to ten times slower and finds
// nothing in it that the run without it does not; that run keeps every full
// count (.ci/run's `go test ./... -update`, and any `go test ./...`), so a
// case only the full count generates is still checked in CI. Each raceN is
// chosen so the smaller run reaches the same code and still catches a
// deliberate break (BENCHMARKS.md, "Test suite time").
func Cases(n, raceN int) int {
	if Race {
		return raceN
	}
	return n
}

//go:build race

package llm

// raceEnabled is llm_test's, for the tests inside the package
// (internal/testkit imports recovery, which imports llm).
const raceEnabled = true

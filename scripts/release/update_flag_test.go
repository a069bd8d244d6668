package main

// The module's tests share one -update flag, so that go test ./... -update
// works in every package, including those with no golden files.
import _ "github.com/rebound-agent/rebound/internal/golden"

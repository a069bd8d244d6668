package main

import (
	"os"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/agent/mcp/mcpmock"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// TestMain removes the binary the e2e tests built, so a test run leaves no
// 16 MB file behind in the temporary directory. Run with mcpmock.EnvServe
// set, the test binary is instead a small MCP server (the MCP tests' stdio
// server).
func TestMain(m *testing.M) {
	if os.Getenv(mcpmock.EnvServe) == "1" {
		mcpmock.Main()
	}
	// Clock times a person reads (the /retry wait hint) are in the local
	// zone: the transcripts pin it to the bubble's own, UTC.
	time.Local = time.UTC
	code := m.Run()
	testkit.RemoveBinary()
	os.Exit(code)
}

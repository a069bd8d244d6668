package main

import (
	"os"
	"testing"

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
	code := m.Run()
	testkit.RemoveBinary()
	os.Exit(code)
}

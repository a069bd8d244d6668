package mcp_test

import (
	"os"
	"testing"

	"github.com/rebound-agent/rebound/agent/mcp/mcpmock"
)

// TestMain lets the tests run this binary as a stdio MCP server.
func TestMain(m *testing.M) {
	if os.Getenv(mcpmock.EnvServe) == "1" {
		mcpmock.Main()
	}
	os.Exit(m.Run())
}

// Command mcpmock is the editor trial's MCP server: agent/mcp/mcpmock served
// on stdio, with its options from the REBOUND_MCPMOCK_* environment
// variables (see that package). all.sh builds it next to the rebound binary,
// and the MCP cases pass it to Rebound in mcpServers.
package main

import "github.com/rebound-agent/rebound/agent/mcp/mcpmock"

func main() { mcpmock.Main() }

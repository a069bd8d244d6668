// Command rebound is an Agent Client Protocol agent: an editor starts it and
// talks JSON-RPC with it over stdin and stdout. See the README for set-up.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// stdout belongs to the protocol: anything that prints to os.Stdout by
	// accident lands on stderr instead of corrupting the stream.
	stdout := os.Stdout
	os.Stdout = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, stdout, os.Stderr)
	stop()
	os.Exit(code)
}

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
	// SIGTERM, SIGINT or SIGHUP (Emacs sends it when it exits) stops
	// Rebound cleanly: turns are answered as cancelled, output is flushed
	// for a bounded time, session logs are closed, and it exits 0. Once the
	// first arrives the default action is restored, so a second one kills
	// at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, stdout, os.Stderr)
	stop()
	os.Exit(code)
}

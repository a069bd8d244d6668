package main

import (
	"context"
	"fmt"
)

func init() {
	register(command{name: "version", summary: "print the version and exit (as --version does)", run: runVersion})
}

func runVersion(_ context.Context, args []string, s streams, _ env) int {
	if len(args) > 0 {
		fmt.Fprintf(s.err, "rebound version: unexpected argument %q\nUsage: rebound version\n", args[0])
		return 2
	}
	return printVersion(s)
}

// printVersion prints the version on stdout, where a script that asks for
// it reads: no protocol is spoken when it is asked.
func printVersion(s streams) int {
	if _, err := fmt.Fprintln(s.out, "rebound", version()); err != nil {
		return 1
	}
	return 0
}

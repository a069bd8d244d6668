//go:build !unix

package main

import "io"

// demoTermWidth is the width in columns of the terminal w writes to, or 0
// when unknown; tests replace it.
var demoTermWidth = func(io.Writer) int { return 0 }

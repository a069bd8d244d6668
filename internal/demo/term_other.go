//go:build !unix

package demo

import "io"

// termWidth is the width in columns of the terminal w writes to, or 0
// when unknown; tests replace it.
var termWidth = func(io.Writer) int { return 0 }

//go:build !unix

package tools

// oNonblock: elsewhere there are no FIFOs in the tree to block an open.
const oNonblock = 0

const oDirectory = 0

//go:build unix

package tools

import "syscall"

// oNonblock makes an open return at once even on a FIFO (which otherwise
// waits for a writer) and is ignored for regular files.
const oNonblock = syscall.O_NONBLOCK

// oDirectory makes an open of anything but a directory fail at once.
const oDirectory = syscall.O_DIRECTORY

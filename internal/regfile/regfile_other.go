//go:build !unix

package regfile

import (
	"io/fs"
	"os"
)

// Elsewhere (Windows) there are no FIFOs in the file system to block an
// open; a final link is refused by the Lstat before the open.
const (
	oNonblock  = 0
	oNofollow  = 0
	oDirectory = 0
)

func links(fs.FileInfo) uint64 { return 1 }

func setBlocking(*os.File) error { return nil }

// Package regfile opens the files Rebound keeps for itself (session logs,
// their shown journals, the session index, the config and credentials
// files) so that whatever else is found at one of their paths costs nothing
// beyond itself.
//
// Only a regular file is opened. Opening a FIFO waits for a writer (for
// ever, if none comes) and opening a device can act, so the type is checked
// before the open (a stat never blocks), the open itself does not block
// (O_NONBLOCK) in case the entry was swapped meanwhile, and the open file is
// checked again (fstat) before anything is read or written; then the file
// is made blocking again, as any other open file is.
//
// A file opened by OpenFile is never reached through a final symbolic link:
// a link planted there would redirect a write to its target. A file with
// other names (hard links) is opened, since a second name given to one of
// Rebound's files elsewhere must not make it unusable; Sole says whether
// an open file has one name, for a file whose name Rebound alone owns.
// Directories are opened without blocking too (OpenDir).
package regfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is matched (errors.Is) by every *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError is a path where a regular file was wanted and something
// else was found: a FIFO, a device, a socket, a directory, a symbolic link
// (Mode has fs.ModeSymlink) where one is not followed, or a file with more
// than one name (Links > 1) opened to be written.
type NotRegularError struct {
	Path  string
	Mode  fs.FileMode
	Links uint64
	// Dir is set when a directory was wanted (OpenDir).
	Dir bool
}

func (e *NotRegularError) Error() string {
	switch {
	case e.Dir:
		return e.Path + " is " + Describe(e.Mode) + ", not a directory"
	case e.Links > 1 && e.Mode.IsRegular():
		return fmt.Sprintf("%s has %d names (hard links): Rebound writes only a file that has one", e.Path, e.Links)
	}
	return e.Path + " is " + Describe(e.Mode) + ", not a regular file"
}

func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// Describe names a file type for a person: "a directory", "a named pipe
// (FIFO)" and so on.
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	default:
		return "a special file"
	}
}

// Open opens the regular file at path for reading. A final symbolic link is
// followed (dotfile managers link config files), to a regular file only.
func Open(path string) (*os.File, error) {
	return open(path, os.O_RDONLY, 0, true)
}

// OpenFile is os.OpenFile for a file Rebound makes itself: only a regular
// file, never through a final symbolic link. It never blocks on what it
// finds. Anything else at path is a *NotRegularError.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return open(path, flag, perm, false)
}

func open(path string, flag int, perm fs.FileMode, follow bool) (*os.File, error) {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	// Checked first without opening: an open can act (a device) or, on a
	// system without O_NONBLOCK, block.
	fi, err := stat(path)
	switch {
	case err == nil:
		if err := check(path, fi); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0:
		return nil, err
	}
	oflag := flag | oNonblock
	if !follow {
		oflag |= oNofollow
	}
	beforeOpen(path)
	f, err := os.OpenFile(path, oflag, perm)
	if err != nil {
		// Swapped meanwhile for a link (ELOOP), a FIFO without a reader
		// (ENXIO), a directory (EISDIR): say what is there.
		if fi, lerr := os.Lstat(path); lerr == nil {
			if cerr := check(path, fi); cerr != nil && (!follow || fi.Mode()&fs.ModeSymlink == 0) {
				return nil, cerr
			}
		}
		return nil, err
	}
	fi, err = f.Stat()
	if err == nil {
		err = check(path, fi)
	}
	if err == nil {
		err = setBlocking(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check refuses fi unless it is a regular file.
func check(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return nil
}

// Sole returns a *NotRegularError (Links set) if the open file f, opened at
// path, has more than one name: appending to a file Rebound alone should
// own through a name someone linked to another file would write that file.
func Sole(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if n := links(fi); n > 1 {
		return &NotRegularError{Path: path, Mode: fi.Mode(), Links: n}
	}
	return nil
}

// OpenDir opens the directory at path (a final symbolic link is followed)
// for listing, without blocking on what it finds: anything but a directory
// is a *NotRegularError, whose Mode says what it is. A missing directory is
// an error matching fs.ErrNotExist.
func OpenDir(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode(), Dir: true}
	}
	beforeOpen(path)
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock|oDirectory, 0)
	if err != nil {
		if fi, lerr := os.Stat(path); lerr == nil && !fi.IsDir() {
			return nil, &NotRegularError{Path: path, Mode: fi.Mode(), Dir: true}
		}
		return nil, err
	}
	if fi, err = f.Stat(); err == nil && !fi.IsDir() {
		err = &NotRegularError{Path: path, Mode: fi.Mode(), Dir: true}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// beforeOpen is a test hook: the moment between the check and the open,
// where a test swaps the entry as a racing process would.
var beforeOpen = func(string) {}

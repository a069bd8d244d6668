package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// MaxReadFileBytes is the largest file LocalFS reads; larger ones are refused
// rather than loaded whole to show a 256 KiB window of them.
const MaxReadFileBytes = 16 << 20

// LocalFS reads and writes text files on the local disk, for clients that do
// not offer their own file system.
//
// Every operation is confined to WS at the moment it happens, not only when
// the path was checked: it resolves the path again and then works through
// an os.Root opened on the workspace root that holds it, so the kernel
// refuses to leave that root even if a file or directory on the way is
// swapped for a symlink meanwhile (while a permission prompt is open, say).
// The zero LocalFS, with no workspace, refuses every call.
type LocalFS struct {
	WS *Workspace
}

// ReadTextFile returns the text of the file at path. Binary files, files
// over MaxReadFileBytes, directories and other non-regular files are refused
// with an error the model can act on.
func (l LocalFS) ReadTextFile(ctx context.Context, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	root, name, err := l.WS.openRoot(path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, fi, err := openRegular(root, name)
	if err != nil {
		if nr, ok := errors.AsType[*notRegularError](err); ok && nr.mode.IsDir() {
			return "", fmt.Errorf("%s is a directory, not a file; use find_files to list its files", path)
		}
		return "", describeOpenErr(path, err, "read_file reads text files only")
	}
	defer f.Close()
	if fi.Size() > MaxReadFileBytes {
		return "", fmt.Errorf("%s is too large to read (%d bytes; the limit is %d); use search_files to find the part you need", path, fi.Size(), MaxReadFileBytes)
	}
	// The size can change after Stat; read one byte past the limit to notice.
	b, err := io.ReadAll(io.LimitReader(f, MaxReadFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxReadFileBytes {
		return "", fmt.Errorf("%s is too large to read (over %d bytes); use search_files to find the part you need", path, MaxReadFileBytes)
	}
	if IsBinary(b) {
		return "", fmt.Errorf("%s is a binary file; read_file reads text only", path)
	}
	return string(b), nil
}

// WriteTextFile replaces the file at path with content atomically: the text
// goes to a temporary file in the same directory, is synced, and is renamed
// over the target, so a reader (or a crash) sees the old file or the new one,
// never half of it. An existing file keeps its permission bits (new files get
// 0644), missing parent directories are created (0755), and a symlink is
// written through to its target (which must be inside the workspace), not
// replaced.
func (l LocalFS) WriteTextFile(ctx context.Context, path, content string) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	// name is the link-free path of the target in root, so renaming onto it
	// writes through any link path had.
	root, name, err := l.WS.openRoot(path)
	if err != nil {
		return err
	}
	defer root.Close()
	mode := fs.FileMode(0o644)
	switch fi, serr := root.Lstat(name); {
	case serr == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory; write_file writes files only", path)
	case serr == nil && fi.Mode()&fs.ModeSymlink != 0:
		// It was not a link when path was resolved, a moment ago.
		return fmt.Errorf("%s changed while it was being written (it is now a symbolic link); nothing was written, try again", path)
	case serr == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is %s, not a regular file; write_file writes text files only", path, regfile.Describe(fi.Mode()))
	case serr == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(serr, fs.ErrNotExist):
		return serr
	}

	dir := filepath.Dir(name)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the directory for %s: %w", path, err)
	}
	tmp, tmpName, err := createTemp(root, dir, "."+filepath.Base(name)+".rebound-", ".tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close() // may already be closed; the error is moot then
			root.Remove(tmpName)
		}
	}()
	if _, err = tmp.WriteString(content); err != nil {
		return err
	}
	// The file is made 0600; set the mode before it becomes visible.
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = root.Rename(tmpName, name); err != nil {
		return err
	}
	// Make the rename itself durable. Best effort: some file systems do not
	// support syncing a directory, and the file is already in place. The
	// open does not block on a FIFO swapped in for the directory.
	if d, derr := root.OpenFile(dir, os.O_RDONLY|oNonblock|oDirectory, 0); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// createTemp creates a new file, mode 0600, in dir inside root, named
// prefix + a random number + suffix, like os.CreateTemp.
func createTemp(root *os.Root, dir, prefix, suffix string) (*os.File, string, error) {
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("cannot create a temporary file in %s", dir)
}

// Test hooks: the moments between a check and the use it guards, where a
// test changes the tree as an attacker racing the agent would.
var (
	afterResolve = func() {}
	afterCheck   = func(name string) {}
)

// notRegularError is an open refused because the file is not a regular one.
type notRegularError struct {
	name string
	mode fs.FileMode
}

func (e *notRegularError) Error() string {
	return e.name + " is " + regfile.Describe(e.mode) + ", not a regular file"
}

// openRegular opens name in root for reading if it is a regular file, and
// returns it with its FileInfo. Opening a FIFO blocks until a writer comes,
// and opening a device can act, so the type is checked first without
// opening (Lstat), the open does not block (O_NONBLOCK, which a regular file
// ignores) in case the entry was swapped meanwhile, and the open file is
// checked again (fstat). Root follows a final link only within itself.
func openRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &notRegularError{name, fi.Mode()}
	}
	afterCheck(name)
	f, err := root.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &notRegularError{name, fi.Mode()}
		}
		return nil, fi, err
	}
	return f, fi, nil
}

// describeOpenErr turns the common open failures into sentences for the
// model; only says what the tool does accept, for a file that is not
// regular.
func describeOpenErr(path string, err error, only string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist; use find_files to look for the file", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s cannot be read: permission denied", path)
	}
	if nr, ok := errors.AsType[*notRegularError](err); ok {
		if nr.mode&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s changed while it was being opened (it is now a symbolic link); try again", path)
		}
		if only == "" {
			return fmt.Errorf("%s is %s, not a regular file", path, regfile.Describe(nr.mode))
		}
		return fmt.Errorf("%s is %s, not a regular file; %s", path, regfile.Describe(nr.mode), only)
	}
	return err
}

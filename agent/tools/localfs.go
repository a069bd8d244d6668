package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxReadFileBytes is the largest file LocalFS reads; larger ones are refused
// rather than loaded whole to show a 256 KiB window of them.
const MaxReadFileBytes = 16 << 20

// LocalFS reads and writes text files on the local disk, for clients that do
// not offer their own file system. Paths must already be checked with
// Workspace.Resolve.
type LocalFS struct{}

// ReadTextFile returns the text of the file at path. Binary files, files
// over MaxReadFileBytes, directories and other non-regular files are refused
// with an error the model can act on.
func (LocalFS) ReadTextFile(ctx context.Context, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", describeOpenErr(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	switch {
	case fi.IsDir():
		return "", fmt.Errorf("%s is a directory, not a file; use find_files to list its files", path)
	case !fi.Mode().IsRegular():
		// A FIFO or device could block or never end.
		return "", fmt.Errorf("%s is not a regular file; read_file reads text files only", path)
	case fi.Size() > MaxReadFileBytes:
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
// written through, not replaced.
func (LocalFS) WriteTextFile(ctx context.Context, path, content string) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Renaming over a link would replace the link; write where it leads.
		if path, err = resolveLenient(path); err != nil {
			return err
		}
	}
	mode := fs.FileMode(0o644)
	switch fi, serr := os.Stat(path); {
	case serr == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory; write_file writes files only", path)
	case serr == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file; write_file writes text files only", path)
	case serr == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(serr, fs.ErrNotExist):
		return serr
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".rebound-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close() // may already be closed; the error is moot then
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.WriteString(content); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; set the mode before it becomes visible.
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable. Best effort: some file systems do not
	// support syncing a directory, and the file is already in place.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// describeOpenErr turns the common open failures into sentences for the
// model.
func describeOpenErr(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist; use find_files to look for the file", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s cannot be read: permission denied", path)
	}
	return err
}

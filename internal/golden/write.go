package golden

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Write puts data at path the way `go test ./... -update` needs it. That
// command runs every package's tests at once, and one package's golden
// file is another's input (inspect reads the snapshots cmd/rebound
// writes), so a file whose content is already data is left untouched (a
// fresh checkout's -update writes nothing), and a changed file is written
// beside path and renamed over it: a reader sees the old file or the new
// one whole, never a truncated one.
func Write(path string, data []byte) error {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644) // CreateTemp's 0600 is not a checked-in file's mode
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CompareSection checks, or with update rewrites, the part of the file at
// path between the lines begin and end (a generated table in a document)
// against body. Several packages rewrite sections of one file
// (docs/providers.md), and their tests run at once under `go test ./...
// -update`, so the read and the write happen under a lock on path: without
// it one package's rewrite could put back the other's stale section.
func CompareSection(t testing.TB, path, begin, end, body string, update bool, rerun string) {
	t.Helper()
	if update {
		unlock, err := lock(path)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i+len(begin) {
		t.Fatalf("%s has no %q … %q section", path, begin, end)
	}
	Compare(t, path, []byte(s[:i+len(begin)]+body+s[j:]), update, rerun)
}

// staleLock is how old a lock may be before it is taken to be left by a
// test binary that died holding it; a section's rewrite takes microseconds.
const staleLock = time.Minute

// lock takes a lock on path shared by every test binary on this machine:
// a directory in the temporary directory named after path, since creating
// a directory is atomic on every platform. It waits for a holder, and
// removes a lock left behind by a test binary that died.
func lock(path string) (unlock func(), err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(os.TempDir(), "rebound-golden-"+hex.EncodeToString(sum[:8])+".lock")
	deadline := time.Now().Add(2 * staleLock)
	for {
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return func() { os.Remove(dir) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s for -update: %w", path, err)
		}
		if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > staleLock {
			os.Remove(dir)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s for -update: %s is still held; remove it if no test runs", path, dir)
		}
		time.Sleep(time.Millisecond) // another package's test holds it for microseconds
	}
}

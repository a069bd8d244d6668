package regfile_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/regfile"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// plants: every kind of non-regular entry a state directory can be handed.
var plants = []struct {
	name string
	make func(t *testing.T, path, target string)
	// dir and fifo are refused even by a read that follows links.
	refusedFollowing bool
}{
	{"fifo", func(t *testing.T, path, _ string) { testkit.Mkfifo(t, path) }, true},
	{"directory", func(t *testing.T, path, _ string) { testkit.Must(t, os.Mkdir(path, 0o700)) }, true},
	{"symlink to a file elsewhere", func(t *testing.T, path, target string) { testkit.Symlink(t, target, path) }, false},
	{"dangling symlink", func(t *testing.T, path, target string) { testkit.Symlink(t, target+".missing", path) }, false},
	{"symlink to a fifo", func(t *testing.T, path, target string) {
		testkit.Mkfifo(t, target+".fifo")
		testkit.Symlink(t, target+".fifo", path)
	}, true},
	{"socket", func(t *testing.T, path, _ string) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Skipf("no unix socket: %v", err)
		}
		t.Cleanup(func() { l.Close() })
	}, true},
}

// Property: whatever is planted at a path, every way Rebound opens its own
// files returns at once, with a *NotRegularError or the file not found,
// and the file a link leads to is neither written nor truncated. A read
// that follows links (the config and credentials files) reads a regular
// file a link leads to, and nothing else.
func TestOpen_PlantedEntriesCostNothing(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	opens := []struct {
		name  string
		open  func(path string) (*os.File, error)
		write bool
	}{
		{"read", func(p string) (*os.File, error) { return regfile.OpenFile(p, os.O_RDONLY, 0) }, false},
		{"append", func(p string) (*os.File, error) { return regfile.OpenFile(p, os.O_RDWR|os.O_APPEND, 0) }, true},
		{"create", func(p string) (*os.File, error) {
			return regfile.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}, true},
		{"truncate", func(p string) (*os.File, error) {
			return regfile.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		}, true},
		{"read following links", regfile.Open, false},
	}
	const content = "a user's file\n"
	for _, pl := range plants {
		for _, op := range opens {
			t.Run(pl.name+"/"+op.name, func(t *testing.T) {
				dir := t.TempDir()
				target := filepath.Join(t.TempDir(), "target")
				testkit.Must(t, os.WriteFile(target, []byte(content), 0o600))
				before, _ := os.Stat(target)
				path := filepath.Join(dir, "s1.jsonl")
				pl.make(t, path, target)
				var f *os.File
				err := testkit.Returns(t, op.name, func() (err error) {
					f, err = op.open(path)
					if err == nil && op.write {
						_, err = f.WriteString("written\n")
					}
					return err
				}, dir, filepath.Dir(target))
				if f != nil {
					f.Close()
				}
				following := op.name == "read following links"
				switch {
				case following && !pl.refusedFollowing && pl.name != "dangling symlink":
					if err != nil {
						t.Errorf("a read following links of a %s = %v, want the file it leads to", pl.name, err)
					}
				case pl.name == "dangling symlink" && following:
					if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("err = %v, want not found", err)
					}
				default:
					if !errors.Is(err, regfile.ErrNotRegular) {
						t.Errorf("err = %v, want a *NotRegularError", err)
					}
				}
				if b, err := os.ReadFile(target); err != nil || string(b) != content {
					t.Errorf("the link's target now holds %q (%v), want it untouched", b, err)
				}
				if after, _ := os.Stat(target); !after.ModTime().Equal(before.ModTime()) {
					t.Error("the link's target was modified")
				}
				if _, err := os.Stat(target + ".missing"); !errors.Is(err, fs.ErrNotExist) {
					t.Error("a dangling link's target was created")
				}
			})
		}
	}
}

// An entry swapped for a FIFO between the check and the open (a racing
// process) is refused at once: the open does not block, the fstat tells.
func TestOpenFile_SwappedForAFIFOAfterTheCheck(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_APPEND, os.O_WRONLY | os.O_APPEND} {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		testkit.Must(t, os.WriteFile(path, []byte("x\n"), 0o600))
		restore := regfile.SetBeforeOpen(func(p string) {
			testkit.Must(t, os.Remove(p))
			testkit.Mkfifo(t, p)
		})
		err := testkit.Returns(t, "open", func() error {
			f, err := regfile.OpenFile(path, flag, 0)
			if err == nil {
				f.Close()
			}
			return err
		}, path)
		restore()
		var nr *regfile.NotRegularError
		if !errors.As(err, &nr) || nr.Mode&fs.ModeNamedPipe == 0 {
			t.Errorf("flag %#x: err = %v, want a *NotRegularError naming a FIFO", flag, err)
		}
	}
}

// A regular file opens, is usable, and is blocking again (the O_NONBLOCK
// of the open is not left on it).
func TestOpenFile_RegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := regfile.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("hello"); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		rc, _ := f.SyscallConn()
		var fl int
		rc.Control(func(fd uintptr) { fl, _ = fcntlFlags(fd) })
		if fl&oNonblock != 0 {
			t.Error("O_NONBLOCK left set on a regular file")
		}
	}
	if _, err := regfile.OpenFile(filepath.Join(t.TempDir(), "none"), os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want not found", err)
	}
}

// OpenDir opens a directory (through a link too) and refuses, at once,
// anything else.
func TestOpenDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	dir := t.TempDir()
	d, err := regfile.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	link := filepath.Join(t.TempDir(), "link")
	testkit.Symlink(t, dir, link)
	if d, err := regfile.OpenDir(link); err != nil {
		t.Errorf("a link to a directory: %v", err)
	} else {
		d.Close()
	}
	fifo := filepath.Join(t.TempDir(), "sessions")
	testkit.Mkfifo(t, fifo)
	err = testkit.Returns(t, "OpenDir of a FIFO", func() error { _, err := regfile.OpenDir(fifo); return err }, fifo)
	if !errors.Is(err, regfile.ErrNotRegular) {
		t.Errorf("OpenDir of a FIFO = %v, want a *NotRegularError", err)
	}
	restore := regfile.SetBeforeOpen(func(p string) { testkit.Must(t, os.Remove(p)); testkit.Mkfifo(t, p) })
	defer restore()
	swapped := filepath.Join(t.TempDir(), "sessions")
	testkit.Must(t, os.Mkdir(swapped, 0o700))
	err = testkit.Returns(t, "OpenDir swapped for a FIFO", func() error { _, err := regfile.OpenDir(swapped); return err }, swapped)
	if !errors.Is(err, regfile.ErrNotRegular) {
		t.Errorf("OpenDir swapped for a FIFO = %v, want a *NotRegularError", err)
	}
}

// Sole tells a file with a second name (a hard link) from one without;
// OpenFile opens both, so a name given to a file elsewhere does not make it
// unusable.
func TestSole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.jsonl")
	testkit.Must(t, os.WriteFile(path, []byte("x\n"), 0o600))
	f, err := regfile.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := regfile.Sole(f, path); err != nil {
		t.Errorf("Sole of a file with one name = %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	testkit.Must(t, os.Link(path, filepath.Join(dir, "second")))
	if err := regfile.Sole(f, path); !errors.Is(err, regfile.ErrNotRegular) || !strings.Contains(err.Error(), "has 2 names") {
		t.Errorf("Sole of a file with two names = %v, want a *NotRegularError saying so", err)
	}
}

//go:build unix

package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/config"
)

// A FIFO at the credentials path blocked whoever opened it (initialize,
// rebound login) until something wrote to it. It is refused at once, also
// through a symlink.
func TestReadAPIKey_FIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "credentials")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, p := range []string{fifo, link} {
			if _, err := config.ReadAPIKey(p, "OPENAI_API_KEY"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("ReadAPIKey(%s) error = %v, want one saying it is not a regular file", p, err)
			}
			if err := config.StoreAPIKey(p, "OPENAI_API_KEY", "sk-test"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("StoreAPIKey(%s) error = %v, want one saying it is not a regular file", p, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a deadline, not a wait: the fix returns at once
		if w, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			w.Close() // play the writer so the blocked open returns
		}
		<-done
		t.Fatal("blocked opening the FIFO")
	}
}

// A FIFO (or a link to one) at the default config path blocked every start
// in its read. The default file is read only if it is a regular file: the
// FIFO is refused at once, by name. A FIFO named with --config is read as
// the user asked (`--config <(…)` is one).
func TestLoad_DefaultConfigFIFO(t *testing.T) {
	for _, viaLink := range []bool{false, true} {
		home := t.TempDir()
		path := filepath.Join(home, ".config", "rebound", "config.toml")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		fifo := path
		if viaLink {
			fifo = filepath.Join(home, "elsewhere")
			if err := os.Symlink(fifo, path); err != nil {
				t.Fatal(err)
			}
		}
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := config.Load(config.Flags{}, func(string) string { return "" }, home)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "named pipe (FIFO), not a regular file") {
				t.Errorf("link %v: Load = %v, want the FIFO refused", viaLink, err)
			}
		case <-time.After(10 * time.Second): // a deadline, not a wait: the fix returns at once
			if w, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatalf("link %v: Load blocked opening the FIFO", viaLink)
		}
	}
}

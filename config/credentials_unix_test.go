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

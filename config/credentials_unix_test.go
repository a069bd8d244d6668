//go:build unix

package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// A FIFO at the credentials path blocked whoever opened it (initialize,
// rebound login) until something wrote to it. It is refused at once, also
// through a symlink.
func TestReadAPIKey_FIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "credentials")
	testkit.Mkfifo(t, fifo)
	link := filepath.Join(dir, "link")
	testkit.Symlink(t, fifo, link)
	testkit.Returns(t, "opening the FIFO", func() error {
		for _, p := range []string{fifo, link} {
			if _, err := config.ReadAPIKey(p, "OPENAI_API_KEY"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("ReadAPIKey(%s) error = %v, want one saying it is not a regular file", p, err)
			}
			if err := config.StoreAPIKey(p, "OPENAI_API_KEY", "sk-test"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("StoreAPIKey(%s) error = %v, want one saying it is not a regular file", p, err)
			}
		}
		return nil
	}, fifo)
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
			testkit.Symlink(t, fifo, path)
		}
		testkit.Mkfifo(t, fifo)
		err := testkit.Returns(t, "Load of the FIFO", func() error {
			_, err := config.Load(config.Flags{}, func(string) string { return "" }, home)
			return err
		}, fifo)
		if err == nil || !strings.Contains(err.Error(), "named pipe (FIFO), not a regular file") {
			t.Errorf("link %v: Load = %v, want the FIFO refused", viaLink, err)
		}
	}
}

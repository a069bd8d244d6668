//go:build unix

package session_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/session"
)

// The session index is a cache under a name Rebound owns: whatever stray
// entry sits there instead of its own file (a FIFO, an empty directory, a
// link, a second name of a user's file) is removed, never followed, and
// the index written anew; a Put then succeeds and leaves the user's file
// as it was.
func TestIndex_StrayEntryIsReplaced(t *testing.T) {
	const userContent = "a user's file\n"
	plants := map[string]func(t *testing.T, user, path string){
		"fifo":                       func(t *testing.T, _, path string) { testkit.Mkfifo(t, path) },
		"empty directory":            func(t *testing.T, _, path string) { testkit.Must(t, os.Mkdir(path, 0o700)) },
		"symlink to a user's file":   func(t *testing.T, user, path string) { testkit.Symlink(t, user, path) },
		"dangling symlink":           func(t *testing.T, user, path string) { testkit.Symlink(t, user+".missing", path) },
		"hard link to a user's file": func(t *testing.T, user, path string) { testkit.Must(t, os.Link(user, path)) },
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			stateDir, user := t.TempDir(), filepath.Join(t.TempDir(), "user.txt")
			testkit.Must(t, os.WriteFile(user, []byte(userContent), 0o600))
			newSessionWithTurn(t, stateDir, "s1")
			path := session.IndexPath(stateDir)
			testkit.Must(t, os.RemoveAll(path))
			plant(t, user, path)

			var warned []error
			x := session.NewIndex(stateDir, func(err error) { warned = append(warned, err) })
			if err := x.Put(session.Summary{SessionID: "s1", Cwd: "/w", UpdatedAt: time.Now()}); err != nil {
				t.Fatalf("Put over a %s: %v", name, err)
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Fatalf("the index is not a regular file of its own after Put: %v, %v", fi, err)
			}
			if b, _ := os.ReadFile(user); !bytes.Equal(b, []byte(userContent)) {
				t.Errorf("the user's file now holds %q", b)
			}
			if len(warned) == 0 {
				t.Error("the removal was not warned about")
			}
		})
	}
}

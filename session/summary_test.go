package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/session"
)

// A line longer than the reader's buffer (a first prompt of 100 KiB) is
// read whole, not garbled by the buffer's refill: its title and time count.
func TestReadSummary_LongLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sess_long.jsonl")
	prompt := "Fix the flaky test " + strings.Repeat("x", 100<<10)
	start := `{"seq":1,"v":1,"time":"2026-01-02T03:04:05Z","type":"session/start","data":{"sessionId":"sess_long","cwd":"/w"}}` + "\n"
	turn := `{"seq":2,"v":1,"time":"2026-01-02T03:04:06Z","type":"turn/start","data":{"turn":1,"text":"` + prompt + `"}}` + "\n"
	if err := os.WriteFile(path, []byte(start+turn), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := session.ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Title, "Fix the flaky test") || s.UpdatedAt.Second() != 6 {
		t.Errorf("summary = %+v, want the long prompt's title and time", s)
	}
}

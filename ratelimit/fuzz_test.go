package ratelimit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/rebound-agent/rebound/recovery"
)

// FuzzBucketFile: whatever another process (or damage) left in a bucket
// file, a bucket reading it neither panics nor holds past MaxHold nor
// names a source holding a control character (the editor is shown it: a
// file's "source":"x\u001b[31m" reached a prompt's error), and what it
// writes back reads again as a state.
func FuzzBucketFile(f *testing.F) {
	f.Add([]byte(`{"v":1,"cooldown":{"until":"2026-12-06T10:00:05Z","source":"retry-after","process":"p","origin":"o"}}`))
	f.Add([]byte(`{"v":1,"pace":{"reset":"2026-12-06T10:00:09Z","remaining":3,"next":"2026-12-06T10:00:03Z","source":"x-ratelimit-reset-requests","process":"p","origin":"o"}}`))
	f.Add([]byte(`{"v":1,"pace":{"reset":"9999-12-06T10:00:09Z","remaining":1e300,"next":"0001-01-01T00:00:00Z","source":"","process":"","origin":""}}`))
	f.Add([]byte("{not json"))
	f.Add([]byte(`{"v":1,"cooldown":{"until":"2026-12-06T10:00:05Z","source":"x\u001b[31m\n","process":"p\u0007","origin":"o"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		r := New(Options{Dir: dir, Pacing: true})
		path := filepath.Join(dir, Key(endpoint, key, model, ScopeModel)+".json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b := r.Bucket(endpoint, key, model)
		for i := range 3 {
			now := t0.Add(time.Duration(i) * time.Second)
			h := b.Hold(now, "s")
			if h != (recovery.Hold{}) && (h.Until.After(now.Add(MaxHold)) || !h.Until.After(now)) {
				t.Fatalf("Hold at %v = %+v", now, h)
			}
			if strings.ContainsFunc(h.Source, unicode.IsControl) {
				t.Fatalf("Hold at %v names source %q", now, h.Source)
			}
		}
		b.Learn(t0, "s", 429, hdr("Retry-After", "1"))
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := readState(fh, t0); err != nil {
			t.Fatalf("the file written back does not read: %v", err)
		}
	})
}

package ratelimit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// FuzzBucketFile: whatever another process (or damage) left in a bucket
// file, a bucket reading it neither panics nor holds past MaxHold, and
// what it writes back reads again as a state.
func FuzzBucketFile(f *testing.F) {
	f.Add([]byte(`{"v":1,"cooldown":{"until":"2026-12-06T10:00:05Z","source":"retry-after","process":"p","origin":"o"}}`))
	f.Add([]byte(`{"v":1,"pace":{"reset":"2026-12-06T10:00:09Z","remaining":3,"next":"2026-12-06T10:00:03Z","source":"x-ratelimit-reset-requests","process":"p","origin":"o"}}`))
	f.Add([]byte(`{"v":1,"pace":{"reset":"9999-12-06T10:00:09Z","remaining":1e300,"next":"0001-01-01T00:00:00Z","source":"","process":"","origin":""}}`))
	f.Add([]byte("{not json"))
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
			if h := b.Hold(now, "s"); h != (recovery.Hold{}) && (h.Until.After(now.Add(MaxHold)) || !h.Until.After(now)) {
				t.Fatalf("Hold at %v = %+v", now, h)
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

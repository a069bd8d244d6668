package ratelimit

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/recovery"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

const endpoint, key, model = "https://api.example.com/v1", "sk-test-0123456789", "m"

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// noJitter puts every slot of a release at its base time.
func noJitter(time.Duration) time.Duration { return 0 }

func memBucket(opts Options) *Bucket {
	if opts.Jitter == nil {
		opts.Jitter = noJitter
	}
	return New(opts).Bucket(endpoint, key, model)
}

func TestHold_CooldownFrom429(t *testing.T) {
	b := memBucket(Options{})
	if h := b.Hold(t0, "s1"); h != (recovery.Hold{}) {
		t.Fatalf("fresh bucket holds: %+v", h)
	}
	b.Learn(t0, "s1", 429, hdr("Retry-After", "5"))
	// Requests held together are released one slot apart (no limit size
	// said: DefaultMinSpacing), not all at the reset.
	for i, c := range []struct {
		origin, by string
	}{{"s1", recovery.HoldBySelf}, {"s2", recovery.HoldByOtherChat}} {
		got := b.Hold(t0.Add(time.Second), c.origin)
		want := recovery.Hold{Until: t0.Add(5*time.Second + time.Duration(i)*DefaultMinSpacing), Reason: recovery.HoldCooldown, By: c.by, Source: "retry-after"}
		if got != want {
			t.Errorf("Hold from %s = %+v, want %+v", c.origin, got, want)
		}
	}
	// Until the last slot given has passed, a request takes the next one.
	if h := b.Hold(t0.Add(5*time.Second), "s2"); h.Until != t0.Add(5*time.Second+2*DefaultMinSpacing) {
		t.Errorf("Hold at the reset, two slots given = %+v, want the third", h)
	}
	if h := b.Hold(t0.Add(6*time.Second), "s2"); h != (recovery.Hold{}) {
		t.Errorf("Hold once the wait and its slots have passed = %+v, want none", h)
	}
}

func TestLearn_SuccessClears_LaterCloseKept(t *testing.T) {
	b := memBucket(Options{})
	b.Learn(t0, "s1", 429, hdr("Retry-After", "10"))
	b.Learn(t0, "s2", 429, hdr("Retry-After", "3")) // a shorter wait does not reopen sooner
	if h := b.Hold(t0.Add(5*time.Second), "s3"); h.Until != t0.Add(10*time.Second) {
		t.Fatalf("Hold = %+v, want until +10s", h)
	}
	b.Learn(t0.Add(time.Second), "s2", 500, nil) // a failure without a wait changes nothing
	if h := b.Hold(t0.Add(5*time.Second), "s3"); h.Reason != recovery.HoldCooldown {
		t.Fatalf("a 500 reopened the bucket: %+v", h)
	}
	b.Learn(t0.Add(time.Second), "s2", 200, nil)
	if h := b.Hold(t0.Add(2*time.Second), "s3"); h != (recovery.Hold{}) {
		t.Errorf("Hold after a success = %+v, want none", h)
	}
}

func TestLearn_RemainingZeroCloses(t *testing.T) {
	for name, h := range map[string]http.Header{
		"openai":    hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "7s", "x-ratelimit-remaining-tokens", "9000", "x-ratelimit-reset-tokens", "1s"),
		"anthropic": hdr("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", t0.Add(7*time.Second).Format(time.RFC3339)),
		"ietf":      hdr("RateLimit", `"minute";r=0;t=7`),
	} {
		b := memBucket(Options{})
		b.Learn(t0, "s1", 200, h)
		if got := b.Hold(t0, "s2"); got.Until != t0.Add(7*time.Second) || got.Reason != recovery.HoldCooldown {
			t.Errorf("%s: Hold = %+v, want a cooldown until +7s", name, got)
		}
	}
}

func TestHold_Pacing(t *testing.T) {
	h := hdr("x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "9s")
	b := memBucket(Options{Pacing: true})
	b.Learn(t0, "s1", 200, h)
	if got := b.Hold(t0, "s1"); got != (recovery.Hold{}) {
		t.Fatalf("first request held: %+v", got)
	}
	// 3 left over 9 s: one every 3 s, each caller its own slot.
	for i, origin := range []string{"s2", "s3"} {
		got := b.Hold(t0, origin)
		if want := (recovery.Hold{Until: t0.Add(time.Duration(3*(i+1)) * time.Second), Reason: recovery.HoldPacing, By: recovery.HoldByOtherChat, Source: "x-ratelimit-reset-requests"}); got != want {
			t.Fatalf("caller %d: %+v, want %+v", i+2, got, want)
		}
	}
	// None left: held to the reset.
	if got := b.Hold(t0.Add(time.Second), "s1"); got.Until != t0.Add(9*time.Second) || got.Reason != recovery.HoldPacing {
		t.Fatalf("fourth: %+v, want until the reset", got)
	}
	// After it, requests are released one spacing apart (the limit's size
	// unknown), from the one held to it on.
	if got := b.Hold(t0.Add(9*time.Second), "s1"); got.Until != t0.Add(9*time.Second+DefaultMinSpacing) {
		t.Fatalf("at the reset: %+v, want one spacing after it", got)
	}
	if got := b.Hold(t0.Add(10*time.Second), "s1"); got != (recovery.Hold{}) {
		t.Fatalf("after the reset: %+v", got)
	}

	// The limit's size known: paced only under a quarter of it left.
	sized := memBucket(Options{Pacing: true})
	sized.Learn(t0, "s1", 200, hdr("x-ratelimit-limit-requests", "4", "x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "9s"))
	for range 3 {
		if got := sized.Hold(t0, "s1"); got != (recovery.Hold{}) {
			t.Fatalf("3 of 4 left, held: %+v", got)
		}
	}
	sized.Learn(t0, "s1", 200, hdr("x-ratelimit-limit-requests", "4", "x-ratelimit-remaining-requests", "1", "x-ratelimit-reset-requests", "9s"))
	sized.Hold(t0, "s1")
	if got := sized.Hold(t0, "s2"); got.Reason != recovery.HoldPacing || got.Until != t0.Add(9*time.Second) {
		t.Fatalf("1 of 4 left, the second caller: %+v, want paced to the reset", got)
	}

	off := memBucket(Options{})
	off.Learn(t0, "s1", 200, h)
	for range 3 {
		if got := off.Hold(t0, "s1"); got != (recovery.Hold{}) {
			t.Fatalf("pacing off, held: %+v", got)
		}
	}
	// Plenty left: no pacing wait worth making.
	many := memBucket(Options{Pacing: true})
	many.Learn(t0, "s1", 200, hdr("x-ratelimit-remaining-requests", "499", "x-ratelimit-reset-requests", "60s"))
	for range 5 {
		if got := many.Hold(t0, "s1"); got != (recovery.Hold{}) {
			t.Fatalf("499 left over 60 s, held: %+v", got)
		}
	}
}

func TestRegistry_SameBucket(t *testing.T) {
	r := New(Options{})
	a := r.Bucket("https://API.example.com:443/v1/", key, model)
	if b := r.Bucket(endpoint, key, model); a != b {
		t.Error("one endpoint spelt two ways gives two buckets")
	}
	if r.Bucket(endpoint, key, "other") == a {
		t.Error("scope model: another model shares the bucket")
	}
	if r.Bucket(endpoint, "sk-other-key-0000", model) == a {
		t.Error("another key shares the bucket")
	}
	k := New(Options{Scope: ScopeKey})
	if k.Bucket(endpoint, key, "x") != k.Bucket(endpoint, key, "y") {
		t.Error("scope key: models get buckets of their own")
	}
	if id := Key(endpoint, key, model, ScopeModel); strings.Contains(id, key) || strings.Contains(Fingerprint(key), key[3:]) {
		t.Error("the key shows in the bucket's name")
	}
}

// shared returns two registries over one directory, as two processes.
func shared(t *testing.T, opts Options) (*Registry, *Registry, string) {
	opts.Dir = filepath.Join(t.TempDir(), "ratelimit")
	if opts.Jitter == nil {
		opts.Jitter = noJitter
	}
	return New(opts), New(opts), opts.Dir
}

func TestFile_SharedBetweenProcesses(t *testing.T) {
	a, b, dir := shared(t, Options{})
	a.Bucket(endpoint, key, model).Learn(t0, "s1", 429, hdr("retry-after-ms", "4000"))
	got := b.Bucket(endpoint, key, model).Hold(t0, "s1")
	want := recovery.Hold{Until: t0.Add(4 * time.Second), Reason: recovery.HoldCooldown, By: recovery.HoldByOtherProcess, Source: "retry-after-ms"}
	if got != want {
		t.Fatalf("the other process sees %+v, want %+v", got, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, Key(endpoint, key, model, ScopeModel)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(key)) || bytes.Contains(data, []byte("example.com")) {
		t.Errorf("the bucket file holds the key or endpoint: %s", data)
	}
	b.Bucket(endpoint, key, model).Learn(t0.Add(time.Second), "s9", 200, nil)
	if got := a.Bucket(endpoint, key, model).Hold(t0.Add(time.Second), "s1"); got != (recovery.Hold{}) {
		t.Errorf("a success in the other process did not reopen: %+v", got)
	}
}

func TestFile_CorruptIsSurvived(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":   "{not json",
		"unknown":   `{"v":1,"evil":true}`,
		"version":   `{"v":7}`,
		"negative":  `{"v":1,"pace":{"reset":"2026-12-06T10:00:09Z","remaining":-1,"next":"2026-12-06T10:00:00Z","source":"x","process":"p","origin":"o"}}`,
		"oversized": `{"v":1}` + strings.Repeat(" ", maxFile),
	} {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			a, _, dir := shared(t, Options{Log: zerolog.New(&log)})
			path := filepath.Join(dir, Key(endpoint, key, model, ScopeModel)+".json")
			os.MkdirAll(dir, 0o700)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			bk := a.Bucket(endpoint, key, model)
			if h := bk.Hold(t0, "s1"); h != (recovery.Hold{}) {
				t.Fatalf("a damaged file holds: %+v", h)
			}
			if !strings.Contains(log.String(), `"level":"warn"`) {
				t.Errorf("no warning: %q", log.String())
			}
			bk.Learn(t0, "s1", 429, hdr("Retry-After", "2"))
			if h := bk.Hold(t0, "s2"); h.Reason != recovery.HoldCooldown {
				t.Errorf("after the damaged file: %+v", h)
			}
			data, _ := os.ReadFile(path)
			if _, err := readState(mustOpen(t, path), t0); err != nil {
				t.Errorf("the file was not repaired: %v (%q)", err, data)
			}
		})
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFile_LockedIsSurvived(t *testing.T) {
	if !lockSupported {
		t.Skip("no file locks here")
	}
	var log bytes.Buffer
	a, _, dir := shared(t, Options{Log: zerolog.New(&log), LockWait: -1})
	path := filepath.Join(dir, Key(endpoint, key, model, ScopeModel)+".json")
	os.MkdirAll(dir, 0o700)
	holder, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if ok, err := tryLock(holder); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	bk := a.Bucket(endpoint, key, model)
	bk.Learn(t0, "s1", 429, hdr("Retry-After", "3"))
	if h := bk.Hold(t0, "s2"); h.Reason != recovery.HoldCooldown || h.By != recovery.HoldByOtherChat {
		t.Errorf("with the file locked, the process forgot what it learnt: %+v", h)
	}
	if !strings.Contains(log.String(), "locked by another process") {
		t.Errorf("no warning: %q", log.String())
	}
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("%d warnings, want one while the file stays locked", n)
	}
	holder.Close()
	bk.Learn(t0, "s1", 429, hdr("Retry-After", "4"))
	if h := New(Options{Dir: dir, Jitter: noJitter}).Bucket(endpoint, key, model).Hold(t0, "s2"); h.Until != t0.Add(4*time.Second) {
		t.Errorf("once unlocked, the file did not get the state: %+v", h)
	}
}

// A file another process (or damage) wrote with a hold far in the future
// holds no longer than MaxHold.
func TestFile_HoldBounded(t *testing.T) {
	a, _, dir := shared(t, Options{})
	os.MkdirAll(dir, 0o700)
	path := filepath.Join(dir, Key(endpoint, key, model, ScopeModel)+".json")
	if err := os.WriteFile(path, []byte(`{"v":1,"cooldown":{"until":"9999-01-01T00:00:00Z","source":"retry-after","process":"p","origin":"o"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := a.Bucket(endpoint, key, model).Hold(t0, "s1")
	if h.Reason != recovery.HoldCooldown || h.By != recovery.HoldByOtherProcess || h.Until.After(t0.Add(MaxHold)) {
		t.Errorf("Hold = %+v, want a cooldown by another process of at most %v", h, MaxHold)
	}
}

// Whatever is planted at a bucket's paths (a FIFO, a link to another file)
// costs a warning and the sharing, never a hang or a write elsewhere.
func TestFile_PlantedEntries(t *testing.T) {
	if !lockSupported {
		t.Skip("no bucket files here")
	}
	for _, plant := range []string{"fifo", "link"} {
		t.Run(plant, func(t *testing.T) {
			var log bytes.Buffer
			a, _, dir := shared(t, Options{Log: zerolog.New(&log), MaxInFlight: 1})
			testkit.Must(t, os.MkdirAll(dir, 0o700))
			id := Key(endpoint, key, model, ScopeModel)
			victim := filepath.Join(t.TempDir(), "victim")
			testkit.Must(t, os.WriteFile(victim, []byte("keep"), 0o600))
			for _, name := range []string{id + ".json", id + ".slot0"} {
				if plant == "fifo" {
					testkit.Mkfifo(t, filepath.Join(dir, name))
				} else {
					testkit.Symlink(t, victim, filepath.Join(dir, name))
				}
			}
			bk := a.Bucket(endpoint, key, model)
			testkit.Returns(t, "Learn, Hold and Acquire", func() error {
				bk.Learn(t0, "s1", 429, hdr("Retry-After", "3"))
				if h := bk.Hold(t0, "s2"); h.Reason != recovery.HoldCooldown {
					t.Errorf("Hold = %+v, want the cooldown kept in memory", h)
				}
				release, err := bk.Acquire(t.Context())
				if err == nil {
					release()
				}
				return err
			}, dir)
			if data, _ := os.ReadFile(victim); string(data) != "keep" {
				t.Errorf("a write went through the link: %q", data)
			}
			if !strings.Contains(log.String(), `"level":"warn"`) {
				t.Errorf("no warning: %s", log.String())
			}
		})
	}
}

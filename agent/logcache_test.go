package agent

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// cacheRig is a logCache of string keys whose owner records what it was
// asked to close.
type cacheRig struct {
	mu      sync.Mutex
	c       *logCache[string]
	dropped []string
}

func newCacheRig(max int, idle time.Duration) *cacheRig {
	r := &cacheRig{}
	r.c = newLogCache(&r.mu, max, idle, func(k string) { r.dropped = append(r.dropped, k) })
	return r
}

// acquire and release are what Agent.acquire and Agent.release do with
// the cache: use, open the log if it is closed, and later let go of it.
func (r *cacheRig) acquire(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.c.use(k)
	if !slices.Contains(r.order(), k) {
		r.c.opened(k)
	}
}

func (r *cacheRig) release(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.c.release(k)
}

// order is the open keys, most recently used first. Under r.mu.
func (r *cacheRig) order() []string {
	var keys []string
	for e := r.c.lru.Front(); e != nil; e = e.Next() {
		keys = append(keys, e.Value.(string))
	}
	return keys
}

func (r *cacheRig) state() (order, dropped []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.order(), slices.Clone(r.dropped)
}

func TestLogCache_EvictsLeastRecentlyUsed(t *testing.T) {
	r := newCacheRig(2, 0)
	for _, k := range []string{"a", "b", "c"} {
		r.acquire(k)
		r.release(k)
	}
	if order, dropped := r.state(); !slices.Equal(order, []string{"c", "b"}) || !slices.Equal(dropped, []string{"a"}) {
		t.Fatalf("after a, b, c with room for 2: open %v, closed %v; want [c b], [a]", order, dropped)
	}
	r.acquire("b") // b is now more recent than c
	r.release("b")
	r.acquire("d")
	r.release("d")
	if order, dropped := r.state(); !slices.Equal(order, []string{"d", "b"}) || !slices.Equal(dropped, []string{"a", "c"}) {
		t.Fatalf("after using b again, then d: open %v, closed %v; want [d b], [a c]", order, dropped)
	}
}

func TestLogCache_InUseIsNeverEvicted(t *testing.T) {
	r := newCacheRig(1, 0)
	r.acquire("a")
	r.acquire("b")
	r.acquire("c")
	if order, dropped := r.state(); len(order) != 3 || len(dropped) != 0 {
		t.Fatalf("three in use with room for 1: open %v, closed %v; want all three open", order, dropped)
	}
	r.release("a") // the least recently used, idle now
	r.release("c") // the most recently used: idle, and past the bound
	if order, dropped := r.state(); !slices.Equal(order, []string{"b"}) || !slices.Equal(dropped, []string{"a", "c"}) {
		t.Fatalf("a and c let go of, b in use: open %v, closed %v; want [b], [a c]", order, dropped)
	}
	r.release("b")
	if order, dropped := r.state(); !slices.Equal(order, []string{"b"}) || len(dropped) != 2 {
		t.Fatalf("b let go of: open %v, closed %v; want [b] kept", order, dropped)
	}
}

func TestLogCache_ReopenAfterEviction(t *testing.T) {
	r := newCacheRig(1, 0)
	r.acquire("a")
	r.release("a")
	r.acquire("b")
	r.release("b") // closes a
	r.acquire("a") // opened again: counted, so idle b goes at once
	if order, dropped := r.state(); !slices.Equal(order, []string{"a"}) || !slices.Equal(dropped, []string{"a", "b"}) {
		t.Fatalf("a opened again: open %v, closed %v; want [a], [a b]", order, dropped)
	}
	r.release("a")
	if order, dropped := r.state(); !slices.Equal(order, []string{"a"}) || len(dropped) != 2 {
		t.Fatalf("a let go of: open %v, closed %v; want [a] kept", order, dropped)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.c.entries) != 1 {
		t.Errorf("the cache keeps %d entries for 1 open log", len(r.c.entries))
	}
}

// The idle close, on synctest's clock: a log is closed a minute after its
// last use ended, never while in use, and a use ends the wait of the one
// before (its timer does nothing).
func TestLogCache_ClosesIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCacheRig(10, time.Minute)
		after := func(d time.Duration) []string {
			time.Sleep(d)
			synctest.Wait()
			_, dropped := r.state()
			return dropped
		}
		r.acquire("a")
		r.release("a")
		if d := after(time.Minute - time.Second); len(d) != 0 {
			t.Fatalf("closed %v before a minute idle", d)
		}
		r.acquire("a") // in use: the timer of the last use must not close it
		if d := after(time.Hour); len(d) != 0 {
			t.Fatalf("closed %v while in use", d)
		}
		r.release("a")
		if d := after(30 * time.Second); len(d) != 0 {
			t.Fatalf("closed %v half a minute after its use", d)
		}
		r.acquire("a")
		r.release("a") // the wait starts again
		if d := after(59 * time.Second); len(d) != 0 {
			t.Fatalf("closed %v by the timer of a use before the last", d)
		}
		if d := after(time.Second); !slices.Equal(d, []string{"a"}) {
			t.Fatalf("a minute after the last use: closed %v, want [a]", d)
		}
		if order, _ := r.state(); len(order) != 0 {
			t.Fatalf("open %v after the idle close", order)
		}
		r.acquire("a") // reopened after the idle close, and closed idle again
		r.release("a")
		if d := after(time.Minute); !slices.Equal(d, []string{"a", "a"}) {
			t.Fatalf("reopened and idle a minute: closed %v, want [a a]", d)
		}
	})
}

// An owner's close (closed) is final: no timer closes the log again, and
// reset stops them all.
func TestLogCache_ClosedAndResetStopTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCacheRig(10, time.Minute)
		for _, k := range []string{"a", "b", "c"} {
			r.acquire(k)
			r.release(k)
		}
		r.mu.Lock()
		r.c.closed("a")
		r.mu.Unlock()
		time.Sleep(30 * time.Second)
		r.mu.Lock()
		r.c.reset()
		r.mu.Unlock()
		time.Sleep(time.Hour)
		synctest.Wait()
		if order, dropped := r.state(); len(order) != 0 || len(dropped) != 0 {
			t.Fatalf("after closed(a) and reset: open %v, closed %v; want none by the cache", order, dropped)
		}
		r.release("b") // a use that outlived reset ends: nothing to do
		if len(r.c.entries) != 0 {
			t.Errorf("%d entries after reset", len(r.c.entries))
		}
	})
}

// Many users at once, each key used by one at a time (as turnMu does),
// with idle timers firing meanwhile: never is a key in use closed, the
// bound holds whenever an idle key is open, and nothing is kept of a key
// neither open nor in use. Run with -race.
func TestLogCache_Concurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keys, users, uses, max = 8, 6, 200, 3
		var mu sync.Mutex
		inUse := map[string]bool{}
		open := map[string]bool{}
		c := newLogCache(&mu, max, time.Second, func(k string) {
			if inUse[k] {
				t.Errorf("%s closed while in use", k)
			}
			open[k] = false
		})
		check := func() {
			busy := 0
			for k := range open {
				if open[k] && inUse[k] {
					busy++
				}
			}
			if c.lru.Len() > max && c.lru.Len() > busy {
				t.Errorf("%d logs open, %d in use, bound %d", c.lru.Len(), busy, max)
			}
			for k, e := range c.entries {
				if !open[k] && !e.busy {
					t.Errorf("entry kept for %s, neither open nor in use", k)
				}
			}
		}
		// One use of a key at a time; a channel, as a goroutine waiting
		// on a mutex would keep synctest's clock from moving.
		var turns [keys]chan struct{}
		for i := range turns {
			turns[i] = make(chan struct{}, 1)
		}
		var wg sync.WaitGroup
		for u := range users {
			rng := rand.New(rand.NewPCG(uint64(u), 1))
			wg.Go(func() {
				for range uses {
					i := rng.IntN(keys)
					k := string(rune('a' + i))
					turns[i] <- struct{}{}
					mu.Lock()
					inUse[k] = true
					c.use(k)
					if !open[k] {
						open[k] = true
						c.opened(k)
					}
					check()
					mu.Unlock()
					time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
					mu.Lock()
					inUse[k] = false
					c.release(k)
					check()
					mu.Unlock()
					<-turns[i]
					time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if c.lru.Len() != 0 || len(c.entries) != 0 {
			t.Errorf("idle a minute: %d open, %d entries; want none", c.lru.Len(), len(c.entries))
		}
	})
}

// FuzzLogCache checks the cache against a model of it: each byte is one
// use, release or owner's close of one of six keys; after each, the open
// keys' order of use, the keys closed for the bound, and the entries kept
// must be the model's.
func FuzzLogCache(f *testing.F) {
	f.Add(uint8(2), []byte{0, 4, 8, 1, 5, 9})
	f.Add(uint8(1), []byte{0, 4, 1, 5, 2, 8, 9, 0, 1})
	f.Add(uint8(3), []byte{0, 6, 4, 8, 12, 16, 20, 1, 13, 17, 21, 5, 9})
	f.Add(uint8(1), []byte{0, 2, 4, 1, 5, 0, 1}) // closed in use, then let go of
	f.Fuzz(func(t *testing.T, max uint8, ops []byte) {
		max = max%4 + 1
		r := newCacheRig(int(max), 0)
		var recency, drops []string // the model: open keys, most recent first
		busy := map[string]bool{}
		for n, b := range ops {
			k := string(rune('a' + int(b>>2)%6))
			switch b & 3 {
			case 0: // acquire
				if busy[k] {
					continue // one use of a key at a time (turnMu)
				}
				busy[k] = true
				recency = append([]string{k}, slices.DeleteFunc(recency, func(o string) bool { return o == k })...)
				r.acquire(k)
			case 1, 3: // release
				if !busy[k] {
					continue
				}
				busy[k] = false
				r.release(k)
			case 2: // the owner closes the log (a session closed or deleted, a broken log)
				recency = slices.DeleteFunc(recency, func(o string) bool { return o == k })
				r.mu.Lock()
				r.c.closed(k)
				r.mu.Unlock()
			}
			if b&3 != 2 { // model of evict
				for i := len(recency) - 1; i >= 0 && len(recency) > int(max); i-- {
					if !busy[recency[i]] {
						drops = append(drops, recency[i])
						recency = slices.Delete(recency, i, i+1)
					}
				}
			}
			order, dropped := r.state()
			if !slices.Equal(order, recency) || !slices.Equal(dropped, drops) {
				t.Fatalf("after op %d (%d on %s): open %v, closed %v; model %v, %v", n, b&3, k, order, dropped, recency, drops)
			}
			kept := 0
			for k := range busy {
				if busy[k] || slices.Contains(recency, k) {
					kept++
				}
			}
			if len(r.c.entries) != kept {
				t.Fatalf("after op %d: %d entries, want %d (open or in use)", n, len(r.c.entries), kept)
			}
		}
	})
}

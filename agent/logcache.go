package agent

import (
	"container/list"
	"sync"
	"time"
)

// logCache bounds the session logs a process holds open, each with a file
// descriptor and the session's events in memory: it keeps their order of
// use, and closes (through drop) the least recently used idle ones beyond
// max, and each one idle for longer than idle. A log in use is never
// closed, so more than max may stay open while more sessions than that are
// in use at once.
//
// Its methods are called under mu, the owner's lock, which its idle timers
// take too; drop, the owner's close of a log, is called under it, for a
// key not in use, after the cache has let go of it (a call of closed by
// drop does nothing).
type logCache[K comparable] struct {
	mu   sync.Locker
	max  int
	idle time.Duration // <= 0: never
	drop func(K)

	lru     *list.List // of the open keys, most recently used first
	entries map[K]*logEntry
}

// logEntry is what the cache knows of a key that is open or in use.
type logEntry struct {
	elem  *list.Element // in lru while open
	busy  bool          // in use: not closed under its user
	timer *time.Timer   // closes it when it fires
	gen   uint64        // bumped by every release, so a stale timer does nothing
}

func newLogCache[K comparable](mu sync.Locker, max int, idle time.Duration, drop func(K)) *logCache[K] {
	return &logCache[K]{mu: mu, max: max, idle: idle, drop: drop, lru: list.New(), entries: make(map[K]*logEntry)}
}

// use marks k in use until release; if it is open, it becomes the most
// recently used.
func (c *logCache[K]) use(k K) {
	e := c.entry(k)
	e.busy = true
	e.stop()
	if e.elem != nil {
		c.lru.MoveToFront(e.elem)
	}
}

// opened records k's newly opened log as the most recently used, and
// closes the least recently used idle ones beyond max.
func (c *logCache[K]) opened(k K) {
	e := c.entry(k)
	if e.elem == nil {
		e.elem = c.lru.PushFront(k)
	}
	c.evict()
}

// release ends a use of k: if it is open, it is closed once idle for
// c.idle, or sooner when more than max are open.
func (c *logCache[K]) release(k K) {
	e, ok := c.entries[k]
	if !ok {
		return
	}
	e.busy = false
	e.gen++
	if e.elem == nil {
		delete(c.entries, k)
		return
	}
	if c.idle > 0 {
		gen := e.gen
		e.timer = time.AfterFunc(c.idle, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.entries[k] == e && e.gen == gen && !e.busy {
				c.close(k)
			}
		})
	}
	c.evict()
}

// closed forgets k's log, closed by the owner: it is no longer counted,
// and no timer closes it.
func (c *logCache[K]) closed(k K) {
	e, ok := c.entries[k]
	if !ok {
		return
	}
	e.stop()
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
	}
	if !e.busy {
		delete(c.entries, k)
	}
}

// reset forgets every key, as their logs are all closed by the owner.
func (c *logCache[K]) reset() {
	for _, e := range c.entries {
		e.stop()
	}
	clear(c.entries)
	c.lru.Init()
}

// close forgets k and has the owner close its log.
func (c *logCache[K]) close(k K) {
	c.closed(k)
	c.drop(k)
}

// evict closes idle keys, least recently used first, while more than max
// are open.
func (c *logCache[K]) evict() {
	for el := c.lru.Back(); el != nil && c.lru.Len() > c.max; {
		prev := el.Prev()
		if k := el.Value.(K); !c.entries[k].busy {
			c.close(k)
		}
		el = prev
	}
}

func (c *logCache[K]) entry(k K) *logEntry {
	e, ok := c.entries[k]
	if !ok {
		e = &logEntry{}
		c.entries[k] = e
	}
	return e
}

func (e *logEntry) stop() {
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
}

package session

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The parts a Log is made of, each alone: the batch's timer, the cursor's
// read position, the file's sync policy and the shown journal.

// A batch fires FlushDelay after its first record, once however many
// records follow; fired lets the next record arm it again; stop stops it.
func TestBatch_ArmsOnceAndFiresAfterFlushDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The batch's owner holds a lock around it (Log.mu); so does this.
		var mu sync.Mutex
		var b batch
		fires := 0
		start := time.Now()
		var firedAt time.Time
		b.fire = func() {
			mu.Lock()
			defer mu.Unlock()
			fires++
			firedAt = time.Now()
			b.fired()
		}
		check := func(after time.Duration, wantFires int) {
			t.Helper()
			time.Sleep(after)
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if fires != wantFires {
				t.Fatalf("%v after the start: fired %d times, want %d", time.Since(start), fires, wantFires)
			}
		}
		mu.Lock()
		b.arm()
		b.arm() // already armed: no second timer
		mu.Unlock()
		check(FlushDelay-time.Millisecond, 0)
		check(time.Millisecond, 1)
		mu.Lock()
		if firedAt.Sub(start) != FlushDelay {
			t.Errorf("fired after %v, want %v", firedAt.Sub(start), FlushDelay)
		}
		b.arm() // fired: the next record arms it again
		mu.Unlock()
		check(FlushDelay, 2)
		mu.Lock()
		b.arm()
		b.stop()
		mu.Unlock()
		check(2*FlushDelay, 2)
	})
}

func TestBatch_FullPastFlushSize(t *testing.T) {
	b := batch{pending: make([]byte, FlushSize)}
	if b.full() {
		t.Error("exactly FlushSize pending is full")
	}
	b.pending = append(b.pending, '\n')
	if !b.full() {
		t.Error("FlushSize+1 pending is not full")
	}
	b.taken()
	if len(b.pending) != 0 || cap(b.pending) < FlushSize {
		t.Errorf("taken: %d pending, cap %d; want none, the memory kept", len(b.pending), cap(b.pending))
	}
}

// A cursor that wrote or read a file's bytes goes on reading it only while
// the file still ends, at the cursor, with the same bytes: for random
// lines, appends continue it; a truncation, or any change of a byte within
// tailCheck before it, does not.
func TestCursor_ContinuesOnlyTheSameFile(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var file []byte
		var c cursor
		for range 1 + r.IntN(8) {
			line := append(bytes.Repeat([]byte{byte('a' + r.IntN(26))}, r.IntN(400)), '\n')
			file = append(file, line...)
			c.wrote(line)
		}
		if c.size != int64(len(file)) || c.lines != bytes.Count(file, []byte{'\n'}) {
			t.Fatalf("wrote %d bytes, %d lines; cursor says %d, %d", len(file), bytes.Count(file, []byte{'\n'}), c.size, c.lines)
		}
		appended := append(bytes.Clone(file), "more\n"...)
		if !c.continues(bytes.NewReader(appended), int64(len(appended))) {
			t.Fatal("an appended file does not continue")
		}
		if c.continues(bytes.NewReader(file), int64(len(file)-1)) {
			t.Fatal("a truncated file continues")
		}
		changed := bytes.Clone(appended)
		i := len(file) - 1 - r.IntN(min(len(file), tailCheck))
		changed[i] ^= 0x20
		if c.continues(bytes.NewReader(changed), int64(len(changed))) {
			t.Fatalf("a file changed %d bytes before the cursor continues", len(file)-i)
		}
		// What a read finds is what a write left.
		var rd cursor
		if err := rd.readTo(bytes.NewReader(file), int64(len(file)), c.lines); err != nil {
			t.Fatal(err)
		}
		if rd.size != c.size || rd.lines != c.lines || !bytes.Equal(rd.tail, c.tail) {
			t.Fatalf("read to the end: %d, %d, %q; written: %d, %d, %q", rd.size, rd.lines, rd.tail, c.size, c.lines, c.tail)
		}
		c.reset()
		if c.size != 0 || c.lines != 0 || c.tail != nil || !c.continues(bytes.NewReader(changed), 1) {
			t.Fatal("a reset cursor reads from the start")
		}
	}
}

// failAfter fails every Write after the first ok ones.
type failAfter struct {
	w  io.Writer
	ok int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.ok == 0 {
		return 0, errors.New("disk full")
	}
	f.ok--
	return f.w.Write(p)
}

// The file's sync policy: a sync after nothing written does nothing; a
// failed write breaks it for good, with a *WriteError every use reports.
func TestLogFile_SyncPolicyAndBreaking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	lf := newLogFile(path, "s1", f, fi)
	defer lf.close()
	if err := lf.sync(); err != nil || lf.dirty {
		t.Fatalf("sync of nothing: %v, dirty %v", err, lf.dirty)
	}
	lf.w = &failAfter{w: f, ok: 1}
	if err := lf.write([]byte("a\n")); err != nil || !lf.dirty {
		t.Fatalf("write: %v, dirty %v", err, lf.dirty)
	}
	if err := lf.sync(); err != nil || lf.dirty {
		t.Fatalf("sync: %v, dirty %v", err, lf.dirty)
	}
	// Nothing written since: the file is not synced again (a closed one
	// would fail).
	open := lf.f
	closed, err := os.Create(path + ".other")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	lf.f = closed
	if err := lf.sync(); err != nil {
		t.Fatalf("a sync with nothing written synced: %v", err)
	}
	lf.f = open
	err = lf.write([]byte("b\n"))
	if _, ok := errors.AsType[*WriteError](err); !ok {
		t.Fatalf("failed write: %v, want a *WriteError", err)
	}
	if u := lf.usable("flush"); !errors.Is(u, err) || !strings.Contains(u.Error(), "an earlier write failed") {
		t.Errorf("usable after a failed write: %v", u)
	}
	lf.close()
	if u := lf.usable("flush"); !errors.Is(u, ErrClosed) {
		t.Errorf("usable after close: %v, want ErrClosed", u)
	}
}

// The shown journal: written through the Log's wrapper, emptied by clear,
// and removed when it closes empty under the lock, kept when it holds
// chunks (a dead process's reply to commit).
func TestShownJournal_WriteClearClose(t *testing.T) {
	dir := t.TempDir()
	j := shownJournal{path: filepath.Join(dir, "s1.jsonl.shown")}
	writes := 0
	j.wrapWith(func(w io.Writer) io.Writer {
		return writerFunc(func(p []byte) (int, error) { writes++; return w.Write(p) })
	})
	if err := j.write("s1", []AssistantChunk{{Turn: 1, Step: 1, Text: "a"}, {Turn: 1, Step: 1, Text: "b"}}); err != nil {
		t.Fatal(err)
	}
	if writes != 1 {
		t.Errorf("%d writes for one call, want 1 through the wrapper", writes)
	}
	chunks, _, err := ReadShown(filepath.Join(dir, "s1.jsonl"))
	if err != nil || len(chunks) != 2 || chunks[0].SessionID != "s1" || !chunks[1].Shown {
		t.Fatalf("ReadShown = %+v, %v", chunks, err)
	}
	if err := j.close(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.path); err != nil {
		t.Fatalf("a journal holding chunks was removed: %v", err)
	}
	if err := j.write("s1", []AssistantChunk{{Turn: 1, Step: 1, Text: "c"}}); err != nil {
		t.Fatal(err)
	}
	if err := j.clear(); err != nil || j.size != 0 {
		t.Fatalf("clear: %v, size %d", err, j.size)
	}
	if err := j.close(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an empty journal was left behind: %v", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

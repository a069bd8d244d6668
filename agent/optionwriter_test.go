package agent

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/session"
)

// TestOptionWriter: a change waits for a writer and goes through it, or
// takes the session itself; its record comes before the change and
// before the writer's next record; a value already set, a record that
// fails, or a cancel changes nothing.
func TestOptionWriter(t *testing.T) {
	var writes []string
	write := func(id, value string) (pendingEvent, error) {
		writes = append(writes, id+"="+value)
		return pendingEvent{ev: session.Event{Type: session.TypeMode}}, nil
	}
	never := func() bool { return false }
	noAcquire := func() error { t.Error("acquired with a writer"); return nil }

	t.Run("through the writer, once there is one", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			writes = nil
			w := &optionWriter{opts: options{mode: "ask"}}
			done := make(chan error)
			go func() {
				changed, own, err := w.set(t.Context(), ModeConfigID, "code", never, noAcquire, write)
				if !changed || own {
					err = errors.Join(err, errors.New("not changed through the writer"))
				}
				done <- err
			}()
			synctest.Wait()
			if len(writes) != 0 {
				t.Fatal("written with no writer")
			}
			w.become(true)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if w.current().mode != "code" || len(writes) != 1 {
				t.Errorf("mode %q, writes %v", w.current().mode, writes)
			}
			var order []string
			taken := w.inOrder(func() { order = append(order, "record") })
			if len(taken) != 1 || len(w.inOrder(func() {})) != 0 {
				t.Errorf("the writer took %d records, then more", len(taken))
			}
			if changed, _, _ := w.set(t.Context(), ModeConfigID, "code", never, noAcquire, write); changed || len(writes) != 1 {
				t.Errorf("a value already set was written again: %v", writes)
			}
			if len(w.stop()) != 0 || w.writer {
				t.Error("stop left a writer")
			}
		})
	})
	t.Run("takes the session when it is free", func(t *testing.T) {
		writes = nil
		w := &optionWriter{}
		acquired := false
		changed, own, err := w.set(t.Context(), ModeConfigID, "code", func() bool { return true },
			func() error { acquired = true; w.become(true); return nil }, write)
		if err != nil || !changed || !own || !acquired {
			t.Errorf("changed %v own %v acquired %v: %v", changed, own, acquired, err)
		}
		if got := w.stop(); len(got) != 1 {
			t.Errorf("the own use took %d records", len(got))
		}
	})
	t.Run("a failed record or acquire changes nothing", func(t *testing.T) {
		w := &optionWriter{writer: true, opts: options{mode: "ask"}}
		bad := errors.New("disk full")
		_, _, err := w.set(t.Context(), ModeConfigID, "code", never, noAcquire,
			func(string, string) (pendingEvent, error) { return pendingEvent{}, bad })
		if !errors.Is(err, bad) || w.current().mode != "ask" || len(w.stop()) != 0 {
			t.Errorf("err %v, mode %q", err, w.current().mode)
		}
		// stop: no writer now, so this set takes the session.
		_, own, err := w.set(t.Context(), ModeConfigID, "code", func() bool { return true }, func() error { return bad }, write)
		if !errors.Is(err, bad) || own || w.current().mode != "ask" {
			t.Errorf("acquire failed: own %v, err %v, mode %q", own, err, w.current().mode)
		}
	})
	t.Run("a cancel ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := &optionWriter{}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error)
			go func() {
				_, _, err := w.set(ctx, ModeConfigID, "code", never, noAcquire, write)
				done <- err
			}()
			synctest.Wait()
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("set: %v", err)
			}
			w.release(func() {}) // nobody waits now: nothing to wake
		})
	})
}

package ratelimit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestAcquire_NoCap(t *testing.T) {
	b := memBucket(Options{})
	for range 100 {
		release, err := b.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
}

// Two processes (registries over one directory), one slot: the second
// waits until the first lets go, and a wait ends with its context.
func TestAcquire_CapAcrossProcesses(t *testing.T) {
	if !lockSupported {
		t.Skip("no file locks here")
	}
	synctest.Test(t, func(t *testing.T) {
		a, b, _ := shared(t, Options{MaxInFlight: 1})
		ba, bb := a.Bucket(endpoint, key, model), b.Bucket(endpoint, key, model)
		release, err := ba.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// In process: the semaphore.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := ba.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a second slot in process: %v", err)
		}
		got := make(chan time.Time, 1)
		go func() {
			r, err := bb.Acquire(t.Context())
			if err != nil {
				t.Error(err)
				return
			}
			got <- time.Now()
			r()
		}()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("the other process took the only slot while it was held")
		}
		released := time.Now()
		release()
		release() // twice is once
		at := <-got
		if wait := at.Sub(released); wait > slotPollMax {
			t.Errorf("the slot was taken %v after it was freed", wait)
		}
		ctx2, cancel2 := context.WithTimeout(t.Context(), time.Minute)
		defer cancel2()
		r, err := ba.Acquire(ctx2)
		if err != nil {
			t.Fatalf("after both released: %v", err)
		}
		r()
	})
}

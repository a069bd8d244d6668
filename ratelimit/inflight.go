package ratelimit

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// Polling for a slot another process holds: a file lock cannot wait under a
// context, so a busy slot is tried again after a pause that doubles from
// slotPollMin to slotPollMax.
const (
	slotPollMin = 10 * time.Millisecond
	slotPollMax = 500 * time.Millisecond
)

// acquire takes an in-process slot, then one of the bucket's MaxInFlight
// slot files (<id>.slot<i>), each held by an exclusive file lock for as long
// as the request is in flight; the system lets go of it if the process
// dies. A slot file that cannot be opened or locked for any other reason
// than being held costs a warning, and the request goes with the
// in-process slot alone.
func (b *Bucket) acquire(ctx context.Context) (func(), error) {
	if b.sem == nil {
		return func() {}, nil
	}
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	freeSem := func() { <-b.sem }
	if b.file == "" {
		return onceFunc(freeSem), nil
	}
	pause := slotPollMin
	for {
		f, err := b.trySlot()
		if err != nil {
			b.r.opts.Log.Warn().Err(err).Str("bucket", b.id).Msg("provider.max_in_flight is applied in this process only: the slot files are not usable")
			return onceFunc(freeSem), nil
		}
		if f != nil {
			return onceFunc(func() { f.Close(); freeSem() }), nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			freeSem()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		pause = min(2*pause, slotPollMax)
	}
}

// trySlot locks the first free slot file; nil when all are held.
func (b *Bucket) trySlot() (*os.File, error) {
	if err := os.MkdirAll(b.r.opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("bucket directory: %w", err)
	}
	for i := range b.r.opts.MaxInFlight {
		f, err := regfile.OpenFile(b.r.path(b.id, fmt.Sprintf(".slot%d", i)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open slot file: %w", err)
		}
		ok, err := tryLock(f)
		if ok {
			return f, nil
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("lock slot file: %w", err)
		}
	}
	return nil, nil
}

func onceFunc(f func()) func() { return sync.OnceFunc(f) }

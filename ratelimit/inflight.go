package ratelimit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/internal/regfile"
	"github.com/rs/zerolog"
)

// Polling for a slot another process holds: a file lock cannot wait under a
// context, so a busy slot is tried again after a pause that doubles from
// slotPollMin to slotPollMax.
const (
	slotPollMin = 10 * time.Millisecond
	slotPollMax = 500 * time.Millisecond
)

// slots is a bucket's cap on requests in flight (Options.MaxInFlight): as
// many in-process slots and, when the bucket's state is shared through a
// file, as many slot files every process sending to the bucket takes. It
// shares nothing with the bucket's state but its id.
type slots struct {
	sem chan struct{} // in-process slots; nil without a cap
	dir string        // where the slot files are; "" caps this process only
	id  string        // the bucket's: slot file i is <id>.slot<i>
	log zerolog.Logger
}

// newSlots returns the cap of bucket id; files says the bucket's state is
// in a file (in opts.Dir), and so are its slots.
func newSlots(opts Options, id string, files bool) slots {
	s := slots{id: id, log: opts.Log}
	if files {
		s.dir = opts.Dir
	}
	if n := opts.MaxInFlight; n > 0 {
		s.sem = make(chan struct{}, n)
	}
	return s
}

// acquire takes an in-process slot, then one of the bucket's MaxInFlight
// slot files (<id>.slot<i>), each held by an exclusive file lock for as long
// as the request is in flight; the system lets go of it if the process
// dies. A slot file that cannot be opened or locked for any other reason
// than being held costs a warning, and the request goes with the
// in-process slot alone.
func (s *slots) acquire(ctx context.Context) (func(), error) {
	if s.sem == nil {
		return func() {}, nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	freeSem := func() { <-s.sem }
	if s.dir == "" {
		return onceFunc(freeSem), nil
	}
	pause := slotPollMin
	for {
		f, err := s.trySlot()
		if err != nil {
			s.log.Warn().Err(err).Str("bucket", s.id).Msg("provider.max_in_flight is applied in this process only: the slot files are not usable")
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
func (s *slots) trySlot() (*os.File, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("bucket directory: %w", err)
	}
	for i := range cap(s.sem) {
		f, err := regfile.OpenFile(filepath.Join(s.dir, fmt.Sprintf("%s.slot%d", s.id, i)), os.O_RDWR|os.O_CREATE, 0o600)
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

package ratelimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// maxFile bounds what is read of a bucket file: a state is a few hundred
// bytes, and a file grown past this was not written by Rebound.
const maxFile = 4 << 10

// maxField bounds a file's strings (a source, a process or session id).
const maxField = 200

// maxGiven bounds a release's count of slots given (a billion requests
// held on one cooldown is damage).
const maxGiven = 1 << 30

// errLocked: another process held the bucket file for longer than LockWait.
var errLocked = errors.New("locked by another process for too long")

// update applies fn to the bucket's state: the file's, read under its lock
// and written back when fn reports a change, or the one in memory when the
// file fails (with a warning). fn may run on a state another process wrote.
func (b *Bucket) update(now time.Time, fn func(*state) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.file == "" {
		fn(&b.mem)
		return
	}
	err := b.updateFile(now, fn)
	if err == nil {
		b.warned = false
		return
	}
	if !b.warned {
		b.warned = true
		b.r.opts.Log.Warn().Err(err).Str("file", b.file).
			Msg("the shared rate-limit state of this provider bucket is not usable; other Rebound processes' limits are not seen until it is")
	}
}

// updateFile is update through the file. A file that cannot be read as a
// state is replaced by the one in memory (and reported); a lock that cannot
// be had in time, or a file that cannot be opened, leaves the change in
// memory only.
func (b *Bucket) updateFile(now time.Time, fn func(*state) bool) error {
	f, err := b.openLocked(b.file, b.r.opts.LockWait)
	if err != nil {
		fn(&b.mem)
		return err
	}
	defer f.Close() // releases the lock
	s, rerr := readState(f, now)
	if rerr != nil {
		s = b.mem // the file is damaged: what this process knew is rewritten
	}
	// A fact that has passed is kept, not dropped: another process's clock
	// may be behind this one's, and for it the fact still holds.
	changed := fn(&s) || rerr != nil
	b.mem = s
	if !changed {
		return nil
	}
	if err := writeState(f, s); err != nil {
		return fmt.Errorf("write bucket file: %w", err)
	}
	if rerr != nil {
		return fmt.Errorf("bucket file replaced: %w", rerr)
	}
	return nil
}

// openLocked opens (creating) path and takes its exclusive lock, trying
// until wait has passed.
func (b *Bucket) openLocked(path string, wait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(b.r.opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("bucket directory: %w", err)
	}
	f, err := regfile.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) // never a FIFO, a device or through a link
	if err != nil {
		return nil, fmt.Errorf("open bucket file: %w", err)
	}
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock bucket file: %w", err)
		}
		if ok {
			return f, nil
		}
		if !time.Now().Before(deadline) {
			f.Close()
			return nil, errLocked
		}
		time.Sleep(pause) // a few ms: the holder reads and writes a few hundred bytes
	}
}

// readState reads a bucket file: empty is the zero state; anything that is
// not a state of this version, or is out of bounds, is an error.
func readState(f *os.File, now time.Time) (state, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return state{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	switch {
	case err != nil:
		return state{}, fmt.Errorf("read bucket file: %w", err)
	case len(data) > maxFile:
		return state{}, fmt.Errorf("bucket file is larger than %d bytes", maxFile)
	case len(bytes.TrimSpace(data)) == 0:
		return state{}, nil
	}
	var s state
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return state{}, fmt.Errorf("bucket file is not a bucket state: %w", err)
	}
	if s.V != stateVersion {
		return state{}, fmt.Errorf("bucket file has version %d, not %d", s.V, stateVersion)
	}
	return s, s.check(now)
}

// check bounds what another process (or damage) wrote: no hold past
// MaxHold from now, no count below zero, no long or invalid strings (nor
// control characters in them).
func (s *state) check(now time.Time) error {
	limit := now.Add(MaxHold)
	var strs []string
	if c := s.Cooldown; c != nil {
		if c.Until.After(limit) {
			c.Until = limit
		}
		strs = append(strs, c.Source, c.Process, c.Origin)
	}
	if p := s.Pace; p != nil {
		if !(p.Remaining >= 0 && p.Remaining <= 1e12 && p.Limit >= 0 && p.Limit <= 1e12 && p.Window >= 0 && p.Window <= MaxHold) {
			return fmt.Errorf("bucket file has a remaining count of %v", p.Remaining)
		}
		p.Reset, p.Next = minTime(p.Reset, limit), minTime(p.Next, limit)
		strs = append(strs, p.Source, p.Process, p.Origin)
	}
	if !(s.Window >= 0 && s.Window <= MaxHold) {
		return fmt.Errorf("bucket file has a window of %v", s.Window)
	}
	if c := s.Cooldown; c != nil && !(c.Limit >= 0 && c.Limit <= 1e12 && c.Window >= 0 && c.Window <= MaxHold) {
		return fmt.Errorf("bucket file has a cooldown of limit %v and window %v", c.Limit, c.Window)
	}
	if r := s.Release; r != nil {
		if r.Per < 1 || r.Per > maxPer || r.Every < time.Millisecond || r.Every > 2*MaxHold || r.Spread < 0 || r.Spread > r.Every || r.Given < 0 || r.Given > maxGiven {
			return fmt.Errorf("bucket file has a release of %d per %v (spread %v, %d given)", r.Per, r.Every, r.Spread, r.Given)
		}
		r.Start = minTime(r.Start, limit)
		strs = append(strs, r.Source, r.Process, r.Origin)
	}
	for _, v := range strs {
		// A source is shown to the person (the hold's words): one
		// printable line.
		if len(v) > maxField || !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
			return errors.New("bucket file has an invalid string")
		}
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.After(b) {
		return b
	}
	return a
}

// writeState replaces the file's content with s. The file is locked: no
// reader sees it half written (a crash might leave it so; the next reader
// then replaces it).
func writeState(f *os.File, s state) error {
	s.V = stateVersion
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(data, '\n'), 0)
	return err
}

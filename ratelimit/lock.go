package ratelimit

import (
	"errors"
	"os"

	"github.com/rebound-agent/rebound/internal/filelock"
)

// lockSupported: bucket files are shared between processes under
// internal/filelock's lock (flock on Unix, LockFileEx on Windows); where
// there is none, buckets are shared within the process only
// (Registry.path gives no file).
const lockSupported = filelock.Supported

// tryLock takes f's exclusive lock without waiting; ok is false when
// someone else holds it. Closing f releases it, and so does the death of
// its process.
func tryLock(f *os.File) (ok bool, err error) {
	err = filelock.TryLock(f)
	if errors.Is(err, filelock.ErrHeld) {
		return false, nil
	}
	return err == nil, err
}

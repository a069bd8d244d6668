//go:build !unix

package ratelimit

import "os"

// lockSupported: without flock, buckets are shared within the process only
// (Registry.path gives no file).
const lockSupported = false

func tryLock(*os.File) (bool, error) { return true, nil }

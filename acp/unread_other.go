//go:build unix && !linux

package acp

// unreadInPipe can't be told here: writeNowFunc polls instead.
func unreadInPipe(int) (int, bool) { return 0, false }

package main

import (
	"bytes"
	"io"
)

// scrubReader removes secrets from a stream as it is read: a streamed
// reply (2xx) can carry a gateway's error in the stream itself
// (`data: {"error": …}`), and what it says is shown and logged like a
// failure's body. A secret split between two reads is caught: the bytes
// that could begin one are held back until the next read shows how they
// go on, or the stream ends. The bytes of a reply arrive as they come
// otherwise, and no more than one secret's length is ever held.
type scrubReader struct {
	src     io.ReadCloser
	secrets [][]byte
	longest int
	buf     []byte
	pending []byte // read, scrubbed, not yet returned
	ready   int    // pending[:ready] may be returned: no secret can start in it
	err     error  // the source's error, returned once pending is drained
}

var redactedBytes = []byte("[redacted]")

func newScrubReader(src io.ReadCloser, secrets []string) *scrubReader {
	r := &scrubReader{src: src}
	for _, s := range secrets {
		r.secrets = append(r.secrets, []byte(s))
		r.longest = max(r.longest, len(s))
	}
	return r
}

func (r *scrubReader) Read(p []byte) (int, error) {
	for r.ready == 0 && r.err == nil {
		if r.buf == nil {
			r.buf = make([]byte, 4<<10)
		}
		n, err := r.src.Read(r.buf)
		r.pending = append(r.pending, r.buf[:n]...)
		r.err = err
		for _, s := range r.secrets {
			r.pending = bytes.ReplaceAll(r.pending, s, redactedBytes)
		}
		r.ready = len(r.pending)
		if r.err == nil {
			r.ready = r.safe()
		}
	}
	if r.ready == 0 {
		return 0, r.err
	}
	n := copy(p, r.pending[:r.ready])
	r.pending = r.pending[n:]
	r.ready -= n
	return n, nil
}

// safe is how much of pending can be returned: all but a tail that is the
// beginning of a secret.
func (r *scrubReader) safe() int {
	for start := max(0, len(r.pending)-r.longest+1); start < len(r.pending); start++ {
		for _, s := range r.secrets {
			if bytes.HasPrefix(s, r.pending[start:]) {
				return start
			}
		}
	}
	return len(r.pending)
}

func (r *scrubReader) Close() error { return r.src.Close() }

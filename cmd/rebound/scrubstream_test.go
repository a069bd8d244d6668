package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// chunked returns data in reads of random sizes (1 to 7 bytes, or what p
// holds), as a network stream does.
type chunked struct {
	r    *rand.Rand
	data []byte
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(c.data), len(p), 1+c.r.IntN(7))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunked) Close() error { return nil }

// TestScrubReader_SecretsSplitAnywhere: whatever the stream, the secrets
// and the sizes of its reads (a secret split across reads, repeated,
// overlapping itself, at the very end, or its beginning alone at the end),
// what is read holds no secret, and with one secret it is exactly the
// stream with each occurrence replaced.
func TestScrubReader_SecretsSplitAnywhere(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 3))
		alphabet := "ab:{}\" \n"
		word := func(n int) string {
			var b strings.Builder
			for range n {
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			}
			return b.String()
		}
		secrets := []string{"sk-" + word(5+r.IntN(6))}
		if r.IntN(3) == 0 {
			secrets = append(secrets, "gw-"+word(5+r.IntN(6)))
		}
		var in strings.Builder
		for range r.IntN(12) {
			switch r.IntN(4) {
			case 0:
				in.WriteString(secrets[r.IntN(len(secrets))])
			case 1:
				s := secrets[r.IntN(len(secrets))]
				in.WriteString(s[:r.IntN(len(s))]) // a beginning only
			default:
				in.WriteString(word(r.IntN(20)))
			}
		}
		sr := newScrubReader(&chunked{r: r, data: []byte(in.String())}, secrets)
		var out bytes.Buffer
		p := make([]byte, 1+r.IntN(64))
		for {
			n, err := sr.Read(p)
			out.Write(p[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range secrets {
			if strings.Contains(out.String(), s) {
				t.Fatalf("seed %d: secret %q read from %q: %q", seed, s, in.String(), out.String())
			}
		}
		if len(secrets) == 1 {
			if want := strings.ReplaceAll(in.String(), secrets[0], "[redacted]"); out.String() != want {
				t.Fatalf("seed %d: read %q from %q, want %q", seed, out.String(), in.String(), want)
			}
		}
	}
}

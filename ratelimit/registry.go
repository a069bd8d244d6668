// Package ratelimit is the shared state of provider buckets: a bucket is
// where a provider counts requests against one limit (an endpoint, a
// credential, and the model where limits are per model). Every session of
// a process gets the same *Bucket for the same bucket, and processes share
// it through a small JSON file per bucket in <state dir>/ratelimit/, read
// and written under an advisory file lock. A bucket learns from every
// provider response (a 429's wait, remaining counts reaching 0, a success)
// and answers, before each request, whether to hold it (recovery.Gate).
//
// Everything here fails open: a file that cannot be read, written or
// locked in time costs a warning on the log and the sharing of that one
// fact, never a request or a turn.
package ratelimit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/recovery"
)

// Scopes of a bucket (provider.limit_scope).
const (
	// ScopeModel: one bucket per endpoint, key and model. OpenAI, Anthropic,
	// Groq and Gemini count limits per model, so a 429 for one model says
	// nothing of another.
	ScopeModel = "model"
	// ScopeKey: one bucket per endpoint and key, whatever the model, for
	// providers and gateways that count per key (OpenRouter's credits, a
	// LiteLLM virtual key's rpm).
	ScopeKey = "key"
)

// Defaults of Options.
const (
	// DefaultMinSpacing: a pacing wait shorter than this is not made. With
	// a window of 60 s it means pacing starts when fewer than 240 requests
	// are left, and with 10 s, fewer than 40.
	DefaultMinSpacing = 250 * time.Millisecond
	// DefaultLockWait bounds a wait for a bucket file another process has
	// locked (its holders keep it for a read and a write of a few hundred
	// bytes); past it the file is skipped, with a warning.
	DefaultLockWait = 500 * time.Millisecond
	// DefaultMaxSpread is recovery.max_retry_after's default.
	DefaultMaxSpread = 10 * time.Second
	// MaxHold bounds any hold: a provider (or a damaged file) that says
	// "a year" holds requests a day at most, and the recovery policy's
	// max_retry_after gives up on far less.
	MaxHold = 24 * time.Hour
)

// Options configure a Registry.
type Options struct {
	// Dir is the directory of the bucket files (<state dir>/ratelimit);
	// empty shares state only within the process.
	Dir string
	// Scope is ScopeModel (the default, "") or ScopeKey.
	Scope string
	// Pacing spreads the requests left in a nearly exhausted window over
	// the time to its reset.
	Pacing bool
	// MinSpacing: 0 is DefaultMinSpacing.
	MinSpacing time.Duration
	// MaxSpread bounds the wait of a request held on a cooldown, slot
	// included: a slot further than this from now is brought forward to it,
	// and a cooldown ending further off gives no slot (the caller gives up
	// on it). Set it to recovery.max_retry_after; 0 is DefaultMaxSpread.
	MaxSpread time.Duration
	// Jitter, when set, replaces the hashed jitter in [0, d) of a slot
	// (tests).
	Jitter func(d time.Duration) time.Duration
	// MaxInFlight caps the requests in flight per bucket, across processes
	// sharing Dir; 0 is no cap.
	MaxInFlight int
	// LockWait: 0 is DefaultLockWait; negative tries the lock once.
	LockWait time.Duration
	// Log gets the warnings of failing open.
	Log zerolog.Logger
}

// Registry hands out the buckets of one process. It is safe for
// concurrent use.
type Registry struct {
	opts    Options
	process string // this process's random id, as written in bucket files
	mu      sync.Mutex
	buckets map[string]*Bucket
}

// New returns a registry; it does no I/O (the directory is made when a
// bucket first writes).
func New(opts Options) *Registry {
	if opts.MinSpacing == 0 {
		opts.MinSpacing = DefaultMinSpacing
	}
	if opts.MaxSpread <= 0 {
		opts.MaxSpread = DefaultMaxSpread
	}
	if opts.LockWait == 0 {
		opts.LockWait = DefaultLockWait
	}
	if opts.Scope == "" {
		opts.Scope = ScopeModel
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand panics rather)
	return &Registry{opts: opts, process: hex.EncodeToString(id[:]), buckets: map[string]*Bucket{}}
}

// Bucket returns the bucket requests with key to endpoint for model go to;
// the same *Bucket for the same bucket, every time.
func (r *Registry) Bucket(endpoint, key, model string) *Bucket {
	id := Key(endpoint, key, model, r.opts.Scope)
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.buckets[id]; ok {
		return b
	}
	b := newBucket(r, id)
	r.buckets[id] = b
	return b
}

// Gate is Bucket as a recovery.Gate.
func (r *Registry) Gate(endpoint, key, model string) recovery.Gate {
	return r.Bucket(endpoint, key, model)
}

// Key names a bucket: a hash of the normalised endpoint, a fingerprint of
// the credential and (ScopeModel) the model. It is a file name and holds
// nothing that can be turned back into the key.
func Key(endpoint, key, model, scope string) string {
	if scope == ScopeKey {
		model = ""
	}
	h := sha256.Sum256([]byte("rebound-bucket\x00" + NormalizeEndpoint(endpoint) + "\x00" + Fingerprint(key) + "\x00" + model))
	return hex.EncodeToString(h[:12])
}

// Fingerprint is a short hash of an API key: enough to tell keys apart,
// nothing to recover one from.
func Fingerprint(key string) string {
	if key == "" {
		return ""
	}
	h := sha256.Sum256([]byte("rebound-credential\x00" + key))
	return hex.EncodeToString(h[:6])
}

// NormalizeEndpoint makes the spellings of one base URL one: scheme and
// host in lower case, a default port dropped, trailing slashes dropped.
// User info and the fragment are dropped; the query stays (Azure's
// api-version names a deployment's API).
func NormalizeEndpoint(endpoint string) string {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || u.Host == "" {
		return strings.TrimRight(strings.TrimSpace(endpoint), "/")
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	host = strings.TrimSuffix(host, map[string]string{"https": ":443", "http": ":80"}[scheme])
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/") + map[bool]string{true: "?" + u.RawQuery}[u.RawQuery != ""]
}

func (r *Registry) path(id string, suffix string) string {
	if r.opts.Dir == "" || !lockSupported {
		return ""
	}
	return filepath.Join(r.opts.Dir, id+suffix)
}

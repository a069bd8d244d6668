package acp

import (
	"context"
	"sync"
)

// runningPrompt is one running session/prompt, an entry of inflight.prompts;
// the pointer is the registry token, so a finished prompt only removes its
// own entry, never a newer one. Not "turn": that is the agent's loop (package
// agent), which this only starts and cancels.
type runningPrompt struct {
	cancel context.CancelCauseFunc
	// ending is set, under inflight.mu, by session/cancel, session/close or
	// when the agent has returned: a new prompt for the session then waits
	// for done instead of being refused.
	ending bool
	done   chan struct{} // closed after the turn's reply was written
}

// inflight tracks what a Server has running for the agent: the work that
// shutdown waits for, the running prompt of each session (which
// session/cancel and session/close cancel), and the sessions being closed
// or deleted (prompts for them are refused meanwhile). Once stopped it
// starts nothing. It knows no connection: a caller replies with the errors
// it returns.
type inflight struct {
	mu       sync.Mutex
	prompts  map[string]*runningPrompt // the running prompt per session id
	closing  map[string]int            // close and delete requests being served, per session id
	stopping bool                      // set once; no work starts after it
	work     sync.WaitGroup            // Add only under mu while !stopping
}

func newInflight() *inflight {
	return &inflight{prompts: map[string]*runningPrompt{}, closing: map[string]int{}}
}

// start counts a piece of work, unless stopped (false). done ends it.
func (f *inflight) start() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return false
	}
	f.work.Add(1)
	return true
}

// done ends a piece of work counted by start, startPrompt, startClose or
// startDelete.
func (f *inflight) done() { f.work.Done() }

// stop refuses all work from now on.
func (f *inflight) stop() {
	f.mu.Lock()
	f.stopping = true
	f.mu.Unlock()
}

// idle returns a channel closed once all counted work is done. Call it
// after stop, so no work is counted meanwhile.
func (f *inflight) idle() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		f.work.Wait()
		close(done)
	}()
	return done
}

// startPrompt registers a prompt of the session, and counts it as work,
// before its goroutine starts, so a session/cancel read right after the
// prompt finds it. Its context is a child of base. prev, if not nil, is
// the session's previous prompt, ending but not yet answered: the new one
// waits for prev.done. A session being closed, or with a prompt not
// ending, refuses it.
func (f *inflight) startPrompt(base context.Context, sessionID string) (ctx context.Context, t, prev *runningPrompt, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return nil, nil, nil, errShuttingDown
	}
	if f.closing[sessionID] > 0 {
		return nil, nil, nil, NewSessionClosing(sessionID)
	}
	prev = f.prompts[sessionID]
	if prev != nil && !prev.ending {
		return nil, nil, nil, NewSessionBusy(sessionID)
	}
	ctx, cancel := context.WithCancelCause(base)
	t = &runningPrompt{cancel: cancel, done: make(chan struct{})}
	f.prompts[sessionID] = t
	f.work.Add(1)
	return ctx, t, prev, nil
}

// answering marks t ending: the agent has returned, so a new prompt for
// the session is not refused (the client may send it as soon as it reads
// the reply, before endPrompt has run).
func (f *inflight) answering(t *runningPrompt) {
	f.mu.Lock()
	t.ending = true
	f.mu.Unlock()
}

// endPrompt removes t, if it is still the session's prompt, releases its
// context, and lets a prompt queued behind it go. It does not end the
// work (done does).
func (f *inflight) endPrompt(sessionID string, t *runningPrompt) {
	f.mu.Lock()
	if f.prompts[sessionID] == t {
		delete(f.prompts, sessionID)
	}
	f.mu.Unlock()
	t.cancel(nil) // a no-op if it was cancelled
	close(t.done)
}

// cancel cancels the session's running prompt with cause, and reports
// whether there was one.
func (f *inflight) cancel(sessionID string, cause error) bool {
	f.mu.Lock()
	t := f.prompts[sessionID]
	if t != nil {
		t.ending = true
	}
	f.mu.Unlock()
	if t != nil {
		t.cancel(cause)
	}
	return t != nil
}

// startClose counts a session/close as work, refuses the session's
// prompts until doneClosing, and cancels its running prompt with
// ErrSessionClosed; it returns that prompt (nil if none), whose done the
// close waits for. The latest prompt: one queued behind an ending one
// waits for it, so its reply comes last.
func (f *inflight) startClose(sessionID string) (*runningPrompt, error) {
	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		return nil, errShuttingDown
	}
	t := f.prompts[sessionID]
	if t != nil {
		t.ending = true
	}
	f.closing[sessionID]++
	f.work.Add(1)
	f.mu.Unlock()
	if t != nil {
		t.cancel(ErrSessionClosed)
	}
	return t, nil
}

// startDelete is startClose for session/delete, which is refused while a
// prompt of the session runs: the turn would write to a log being removed.
func (f *inflight) startDelete(sessionID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.stopping:
		return errShuttingDown
	case f.prompts[sessionID] != nil:
		return NewSessionRunning(sessionID, MethodSessionDelete)
	}
	f.closing[sessionID]++
	f.work.Add(1)
	return nil
}

// doneClosing ends a close or delete's refusal of the session's prompts
// (not its work: done does).
func (f *inflight) doneClosing(sessionID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing[sessionID]--; f.closing[sessionID] <= 0 {
		delete(f.closing, sessionID)
	}
}

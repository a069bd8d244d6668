package acp_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
)

// stuckServer runs a Server whose output is never read (every Write
// blocks until gate is closed), on a turn that streams updates until it
// can't. It returns once the turn is blocked writing.
type stuckServer struct {
	in     *io.PipeWriter
	out    *gatedWriter
	cancel context.CancelFunc
	done   chan error
	log    syncBuffer
}

func startStuckServer(t *testing.T, agent *fakeAgent) *stuckServer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	inR, inW := io.Pipe()
	s := &stuckServer{in: inW, out: newGatedWriter(), cancel: cancel, done: make(chan error, 1)}
	srv := acp.NewServer(agent, acp.Config{Logger: zerolog.New(io.MultiWriter(t.Output(), &s.log))})
	go func() { s.done <- srv.Serve(ctx, inR, s.out) }()
	if _, err := io.WriteString(inW, initializeLine+"\n"+prompt(1, "s", "go")+"\n"); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return s
}

// streamUntilStopped is a turn that sends 1 MiB updates until Update
// fails: with nobody reading, it ends up blocked in Update (over the 4 MiB
// the stream queues).
func streamUntilStopped(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
	big := strings.Repeat("x", 1<<20)
	for {
		if err := c.Update(ctx, req.SessionID, textUpdate(big)); err != nil {
			return acp.PromptResponse{}, err
		}
	}
}

// When nobody reads the output, stopping is still bounded: Serve cancels
// the turn, waits stopTimeout (2 s) for it to reply, then closes the
// stream, which releases the turn blocked writing, waits closeGrace (1 s)
// more for the stuck Write, and returns, logging the lost output. Before,
// it waited for the turn forever.
func TestServer_StopIsBoundedWhenOutputIsStuck(t *testing.T) {
	for _, how := range []string{"input ends", "ctx cancelled"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := startStuckServer(t, &fakeAgent{PromptFunc: streamUntilStopped})
				start := time.Now()
				var want error
				if how == "input ends" {
					s.in.Close()
				} else {
					s.cancel()
					want = context.Canceled
				}
				if err := <-s.done; !errors.Is(err, want) {
					t.Errorf("Serve() = %v, want %v", err, want)
				}
				if d := time.Since(start); d != 3*time.Second {
					t.Errorf("Serve returned after %v, want 3s", d)
				}
				if !strings.Contains(s.log.String(), "output lost at shutdown") {
					t.Error("the lost output is not logged")
				}
				s.cancel()
				close(s.out.gate) // let the stuck Write end, or the bubble fails
			})
		})
	}
}

// A turn that ignores cancellation does not hold Serve either: it is left
// unanswered after stopTimeout and closeGrace.
func TestServer_StopIsBoundedWhenAgentIgnoresCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		never := make(chan struct{})
		agent := &fakeAgent{PromptFunc: func(context.Context, acp.PromptRequest, acp.Client) (acp.PromptResponse, error) {
			<-never
			return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "go"))
		synctest.Wait()
		start := time.Now()
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("Serve returned after %v, want 3s", d)
		}
		if !strings.Contains(w.log.String(), "the agent did not stop") {
			t.Error("the unanswered turn is not logged")
		}
		close(never)
	})
}

// A slow but live reader still gets everything: the wait is for the turns
// and the output together, and only ends early when they are done.
func TestServer_StopWaitsForSlowOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			<-ctx.Done()
			for range 50 {
				c.Update(ctx, req.SessionID, textUpdate("last words"))
			}
			return acp.PromptResponse{}, ctx.Err()
		}}
		s := startStuckServer(t, agent)
		stop := make(chan struct{})
		defer close(stop)
		go func() { // a reader taking 10 ms per Write
			for {
				select {
				case <-time.After(10 * time.Millisecond):
				case <-stop:
					return
				}
				select {
				case s.out.gate <- struct{}{}:
				case <-stop:
					return
				}
			}
		}()
		s.cancel()
		if err := <-s.done; !errors.Is(err, context.Canceled) {
			t.Errorf("Serve() = %v", err)
		}
		out, _ := s.out.output()
		if n := strings.Count(out, "last words"); n != 50 || !strings.Contains(out, `"stopReason":"cancelled"`) {
			t.Errorf("written when Serve returned: %d updates of 50, reply %v", n, strings.Contains(out, `"stopReason":"cancelled"`))
		}
		if strings.Contains(s.log.String(), "output lost") {
			t.Error("output reported lost")
		}
	})
}

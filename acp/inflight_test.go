package acp

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// A session runs one prompt at a time: a second is refused as busy while
// the first runs, queued behind it once it is ending, and the registry
// entry belongs to the prompt that made it.
func TestInflight_OnePromptPerSession(t *testing.T) {
	f := newInflight()
	base := context.Background()
	ctx1, t1, prev, err := f.startPrompt(base, "s")
	if err != nil || prev != nil {
		t.Fatalf("first prompt: prev %v, err %v", prev, err)
	}
	if _, _, _, err := f.startPrompt(base, "s"); reason(err) != "session_busy" {
		t.Fatalf("second prompt while the first runs: %v, want busy", err)
	}
	if _, _, _, err := f.startPrompt(base, "other"); err != nil {
		t.Fatalf("a prompt of another session: %v", err)
	}
	if !f.cancel("s", ErrCancelled) {
		t.Fatal("cancel found no running prompt")
	}
	if !errors.Is(context.Cause(ctx1), ErrCancelled) {
		t.Fatalf("cancelled prompt's cause = %v", context.Cause(ctx1))
	}
	_, t2, prev, err := f.startPrompt(base, "s")
	if err != nil || prev != t1 {
		t.Fatalf("prompt after cancel: prev %p (want %p), err %v", prev, t1, err)
	}
	f.endPrompt("s", t1) // the old one ends after the new one registered
	if f.cancel("s", ErrCancelled) != true {
		t.Fatal("the old prompt's end removed the new one's entry")
	}
	f.endPrompt("s", t2)
	if f.cancel("s", ErrCancelled) {
		t.Fatal("a prompt is still registered after it ended")
	}
	select {
	case <-t1.done:
	default:
		t.Fatal("endPrompt did not release the prompts queued behind it")
	}
}

// The agent has returned: a new prompt is not refused while the reply is
// being written.
func TestInflight_AnsweringLetsTheNextPromptQueue(t *testing.T) {
	f := newInflight()
	_, t1, _, _ := f.startPrompt(context.Background(), "s")
	f.answering(t1)
	if _, _, prev, err := f.startPrompt(context.Background(), "s"); err != nil || prev != t1 {
		t.Fatalf("prompt while the previous one is answered: prev %v, err %v", prev, err)
	}
}

// Close cancels the running prompt with ErrSessionClosed; prompts are
// refused until every close and delete of the session is done; delete is
// refused while a prompt runs.
func TestInflight_CloseAndDelete(t *testing.T) {
	f := newInflight()
	ctx, t1, _, _ := f.startPrompt(context.Background(), "s")
	if err := f.startDelete("s"); reason(err) != "session_busy" {
		t.Fatalf("delete while a prompt runs: %v, want refused", err)
	}
	got, err := f.startClose("s")
	if err != nil || got != t1 {
		t.Fatalf("close: prompt %v, err %v", got, err)
	}
	if !errors.Is(context.Cause(ctx), ErrSessionClosed) {
		t.Fatalf("closed prompt's cause = %v", context.Cause(ctx))
	}
	f.endPrompt("s", t1)
	if err := f.startDelete("s"); err != nil {
		t.Fatalf("delete once the prompt ended: %v", err)
	}
	f.doneClosing("s") // the close
	if _, _, _, err := f.startPrompt(context.Background(), "s"); reason(err) != "session_closing" {
		t.Fatalf("prompt while a delete runs: %v, want closing", err)
	}
	f.doneClosing("s") // the delete
	if _, _, _, err := f.startPrompt(context.Background(), "s"); err != nil {
		t.Fatalf("prompt once close and delete are done: %v", err)
	}
	if len(f.closing) != 0 {
		t.Fatalf("closing = %v, want empty", f.closing)
	}
}

// Once stopped nothing starts, and idle waits for exactly the work counted.
func TestInflight_StopAndIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newInflight()
		if !f.start() {
			t.Fatal("start refused before stop")
		}
		_, p, _, _ := f.startPrompt(context.Background(), "s")
		f.stop()
		if f.start() {
			t.Fatal("start accepted after stop")
		}
		if _, _, _, err := f.startPrompt(context.Background(), "t"); !errors.Is(err, errShuttingDown) {
			t.Fatalf("prompt after stop: %v", err)
		}
		if _, err := f.startClose("s"); !errors.Is(err, errShuttingDown) {
			t.Fatalf("close after stop: %v", err)
		}
		if err := f.startDelete("t"); !errors.Is(err, errShuttingDown) {
			t.Fatalf("delete after stop: %v", err)
		}
		idle := f.idle()
		f.done()
		synctest.Wait()
		select {
		case <-idle:
			t.Fatal("idle before the prompt's work ended")
		default:
		}
		f.endPrompt("s", p)
		f.done()
		synctest.Wait()
		select {
		case <-idle:
		default:
			t.Fatal("not idle once all work ended")
		}
	})
}

// reason is data.reason of a RequestError ("" for anything else).
func reason(err error) string {
	re, ok := errors.AsType[*RequestError](err)
	if !ok {
		return ""
	}
	data, _ := re.Data.(map[string]any)
	r, _ := data["reason"].(string)
	return r
}

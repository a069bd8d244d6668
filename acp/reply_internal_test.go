package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

// fakeReplyConn records the replies it is given.
type fakeReplyConn struct {
	results []any
	errs    []*jsonrpc2.Error
	fail    error
}

func (c *fakeReplyConn) Reply(_ context.Context, _ jsonrpc2.ID, result any) error {
	c.results = append(c.results, result)
	return c.fail
}

func (c *fakeReplyConn) ReplyWithError(_ context.Context, _ jsonrpc2.ID, e *jsonrpc2.Error) error {
	c.errs = append(c.errs, e)
	return c.fail
}

// Each request gets one answer: its result as JSON, or its error mapped
// with data only when the client reads it (asked at each reply); a result
// that can't be encoded is an internal error.
func TestReplier_OneAnswerEach(t *testing.T) {
	rich := false
	r := replier{log: zerolog.Nop(), rich: func() bool { return rich }, idText: jsonrpc2.ID.String}
	req := &jsonrpc2.Request{Method: MethodSessionNew, ID: jsonrpc2.ID{Num: 1}}
	withData := &RequestError{Code: CodeInvalidParams, Message: "m", Data: map[string]any{"k": 1}}
	for i, tc := range []struct {
		res      any
		err      error
		rich     bool
		wantCode int64 // 0: a result
		wantData bool
	}{
		{res: NewSessionResponse{SessionID: "s"}},
		{err: withData, wantCode: CodeInvalidParams},
		{err: fmt.Errorf("wrapped: %w", withData), rich: true, wantCode: CodeInvalidParams, wantData: true},
		{err: errors.New("boom"), wantCode: CodeInternalError},
		{err: context.Canceled, wantCode: CodeRequestCancelled},
		{res: func() {}, wantCode: CodeInternalError},
	} {
		rich = tc.rich
		var c fakeReplyConn
		r.reply(context.Background(), &c, req, tc.res, tc.err)
		if len(c.results)+len(c.errs) != 1 {
			t.Fatalf("%d: %d results and %d errors, want one answer", i, len(c.results), len(c.errs))
		}
		if tc.wantCode == 0 {
			got, _ := c.results[0].(json.RawMessage)
			if want, _ := json.Marshal(tc.res); string(got) != string(want) {
				t.Fatalf("%d: result %s, want %s", i, got, want)
			}
			continue
		}
		if len(c.errs) != 1 || c.errs[0].Code != tc.wantCode || (c.errs[0].Data != nil) != tc.wantData {
			t.Fatalf("%d: answered %+v, want code %d, data %v", i, c.errs, tc.wantCode, tc.wantData)
		}
	}
}

// A cancelled turn's reply is cancelled, whatever the agent returned while
// unwinding; any other turn needs a stop reason.
func TestPromptResult(t *testing.T) {
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(ErrCancelled)
	shutdown, cancel2 := context.WithCancelCause(context.Background())
	cancel2(ErrShutdown) // a kind of cancel
	released, cancel3 := context.WithCancel(context.Background())
	cancel3() // not a cancel: the turn's own end
	boom := errors.New("boom")
	for i, tc := range []struct {
		ctx     context.Context
		res     PromptResponse
		err     error
		want    StopReason
		wantErr bool
		dropped bool
	}{
		{ctx: context.Background(), res: PromptResponse{StopReason: StopEndTurn}, want: StopEndTurn},
		{ctx: context.Background(), wantErr: true},
		{ctx: context.Background(), err: boom, wantErr: true},
		{ctx: cancelled, err: boom, want: StopCancelled, dropped: true},
		{ctx: cancelled, want: StopCancelled},
		{ctx: cancelled, res: PromptResponse{StopReason: StopEndTurn}, want: StopEndTurn},
		{ctx: shutdown, err: boom, want: StopCancelled, dropped: true},
		{ctx: released, err: boom, wantErr: true},
	} {
		var dropped error
		res, err := promptResult(tc.ctx, tc.res, tc.err, func(err error) { dropped = err })
		if (err != nil) != tc.wantErr || err == nil && res.StopReason != tc.want || (dropped != nil) != tc.dropped {
			t.Errorf("%d: promptResult = %+v, %v (dropped %v); want %q, error %v, dropped %v", i, res, err, dropped, tc.want, tc.wantErr, tc.dropped)
		}
	}
}

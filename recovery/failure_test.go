package recovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
)

var ignoreUnexported = cmpopts.IgnoreUnexported(recovery.Failure{})

// The provider's answers are real bodies (testdata/errors, testdata/
// stream_errors) served by the mock and parsed by the real adapter, so
// these cases pin the whole path from bytes to failure facts.
func TestClassify_ProviderErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int               // an HTTP error; 0 for a stream
		body    string            // fixture under testdata/errors
		headers map[string]string // added to the reply
		stream  string            // fixture under testdata/stream_errors
		text    string            // content sent before the stream error
		want    recovery.Failure
		// wantRetryAfterErr is the text of RetryAfterErr(), "" for nil
		wantRetryAfterErr string
	}{
		{
			name: "400 invalid_request_error", status: 400, body: "openai_400_invalid_value.json",
			want: recovery.Failure{Code: recovery.InvalidRequest, Status: 400, RequestID: "mock-req-1",
				Message:      "Invalid value for 'temperature': expected a number between 0 and 2.",
				ProviderCode: "invalid_value", ProviderType: "invalid_request_error"},
		},
		{
			name: "400 whose message says rate limit is still an invalid request", status: 400, body: "openai_400_message_says_rate_limit.json",
			want: recovery.Failure{Code: recovery.InvalidRequest, Status: 400, RequestID: "mock-req-1",
				Message:      "Rate limit exceeded: this request asks for more tokens per minute than your limit allows. Reduce max_tokens.",
				ProviderType: "invalid_request_error"},
		},
		{
			name: "400 context_length_exceeded", status: 400, body: "openai_400_context_length_exceeded.json",
			want: recovery.Failure{Code: recovery.ContextOverflow, Status: 400, RequestID: "mock-req-1",
				Message:      "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
				ProviderCode: "context_length_exceeded", ProviderType: "invalid_request_error", Dialect: "openai.context_length_exceeded"},
		},
		{
			// vLLM's flat shape: no code says so, its type and message do
			// (the dialect table's vllm entry).
			name: "400 flat body whose message says context length", status: 400, body: "vllm_400_flat_context_too_long.json",
			want: recovery.Failure{Code: recovery.ContextOverflow, Status: 400, RequestID: "mock-req-1", Dialect: "vllm.max_context_length",
				Message:      "This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
				ProviderCode: "400", ProviderType: "BadRequestError"},
		},
		{
			name: "401 invalid_api_key", status: 401, body: "openai_401_invalid_api_key.json",
			headers: map[string]string{"X-Request-Id": "req_9c2f4e1d"},
			want: recovery.Failure{Code: recovery.Auth, Status: 401, RequestID: "req_9c2f4e1d",
				Message:      "Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.",
				ProviderCode: "invalid_api_key", ProviderType: "invalid_request_error"},
		},
		{
			name: "402 insufficient balance", status: 402, body: "deepseek_402_insufficient_balance.json",
			want: recovery.Failure{Code: recovery.Quota, Status: 402, RequestID: "mock-req-1",
				Message: "Insufficient Balance", ProviderCode: "invalid_request_error", ProviderType: "unknown_error"},
		},
		{
			name: "403 Anthropic permission_error", status: 403, body: "anthropic_403_permission_error.json",
			want: recovery.Failure{Code: recovery.Auth, Status: 403, RequestID: "mock-req-1",
				Message: "Your API key does not have permission to use the specified resource.", ProviderType: "permission_error"},
		},
		{
			name: "404 model_not_found", status: 404, body: "openai_404_model_not_found.json",
			want: recovery.Failure{Code: recovery.InvalidRequest, Status: 404, RequestID: "mock-req-1",
				Message:      "The model `gpt-9` does not exist or you do not have access to it.",
				ProviderCode: "model_not_found", ProviderType: "invalid_request_error"},
		},
		{
			name: "408 from a proxy, plain text", status: 408, body: "proxy_408.txt",
			want: recovery.Failure{Code: recovery.Timeout, Status: 408, RequestID: "mock-req-1", Message: "upstream request timeout"},
		},
		{
			name: "413 Anthropic request_too_large", status: 413, body: "anthropic_413_request_too_large.json",
			want: recovery.Failure{Code: recovery.InvalidRequest, Status: 413, RequestID: "mock-req-1",
				Message: "Request exceeds the maximum allowed number of bytes.", ProviderType: "request_too_large"},
		},
		{
			name: "429 rate_limit_exceeded with Retry-After", status: 429, body: "openai_429_rate_limit_exceeded.json",
			headers: map[string]string{"Retry-After": "2", "X-Request-Id": "req_7b1e2c"},
			want: recovery.Failure{Code: recovery.RateLimit, Status: 429, RequestID: "req_7b1e2c", RetryAfterMs: ptr[int64](2000), RetryAfterSource: "retry-after",
				Message:      "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s.",
				ProviderCode: "rate_limit_exceeded", ProviderType: "tokens", Dialect: "openai.rate_limit_exceeded"},
		},
		{
			name: "429 retry-after-ms is preferred over Retry-After", status: 429, body: "openai_429_rate_limit_exceeded.json",
			headers: map[string]string{"Retry-After": "2", "retry-after-ms": "1500.5"},
			want: recovery.Failure{Code: recovery.RateLimit, Status: 429, RequestID: "mock-req-1", RetryAfterMs: ptr[int64](1500), RetryAfterSource: "retry-after-ms",
				Message:      "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s.",
				ProviderCode: "rate_limit_exceeded", ProviderType: "tokens", Dialect: "openai.rate_limit_exceeded"},
		},
		{
			// The unusable header is reported; the message's own hint is used.
			name: "429 with an unusable Retry-After", status: 429, body: "openai_429_rate_limit_exceeded.json",
			headers: map[string]string{"Retry-After": "soon"},
			want: recovery.Failure{Code: recovery.RateLimit, Status: 429, RequestID: "mock-req-1", RetryAfterMs: ptr[int64](1400), RetryAfterSource: "message",
				Message:      "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 1.4s.",
				ProviderCode: "rate_limit_exceeded", ProviderType: "tokens", Dialect: "openai.rate_limit_exceeded"},
			wantRetryAfterErr: `invalid Retry-After header "soon": neither seconds nor an HTTP date`,
		},
		{
			name: "429 insufficient_quota is quota, not a rate limit", status: 429, body: "openai_429_insufficient_quota.json",
			want: recovery.Failure{Code: recovery.Quota, Status: 429, RequestID: "mock-req-1",
				Message:      "You exceeded your current quota, please check your plan and billing details.",
				ProviderCode: "insufficient_quota", ProviderType: "insufficient_quota", Dialect: "openai.insufficient_quota"},
		},
		{
			name: "429 Anthropic rate_limit_error", status: 429, body: "anthropic_429_rate_limit_error.json",
			headers: map[string]string{"retry-after": "30"},
			want: recovery.Failure{Code: recovery.RateLimit, Status: 429, RequestID: "mock-req-1", RetryAfterMs: ptr[int64](30000), RetryAfterSource: "retry-after",
				Message: "Number of request tokens has exceeded your per-minute rate limit.", ProviderType: "rate_limit_error", Dialect: "anthropic.rate_limit_error"},
		},
		{
			name: "429 Gemini array body", status: 429, body: "gemini_429_resource_exhausted.json",
			want: recovery.Failure{Code: recovery.RateLimit, Status: 429, RequestID: "mock-req-1",
				Message: "Resource has been exhausted (e.g. check quota).", ProviderCode: "429", ProviderType: "RESOURCE_EXHAUSTED"},
		},
		{
			name: "500 server_error", status: 500, body: "openai_500_server_error.json",
			want: recovery.Failure{Code: recovery.Server, Status: 500, RequestID: "mock-req-1",
				Message: "The server had an error while processing your request. Sorry about that!", ProviderType: "server_error"},
		},
		{
			name: "502 HTML page from a proxy", status: 502, body: "nginx_502.html",
			want: recovery.Failure{Code: recovery.Server, Status: 502, RequestID: "mock-req-1",
				// A gateway's page is named as one, not dumped; still SERVER, so retried.
				Message: `mock.invalid answered with a web page ("502 Bad Gateway") instead of the API's error`},
		},
		{
			name: "503 whose message says overloaded is a server error", status: 503, body: "openai_503_engine_overloaded.json",
			want: recovery.Failure{Code: recovery.Server, Status: 503, RequestID: "mock-req-1",
				Message: "The engine is currently overloaded, please try again later.", ProviderType: "server_error"},
		},
		{
			name: "503 with overloaded_error type", status: 503, body: "anthropic_529_overloaded_error.json",
			want: recovery.Failure{Code: recovery.Overloaded, Status: 503, RequestID: "mock-req-1",
				Message: "Overloaded", ProviderType: "overloaded_error", Dialect: "anthropic.overloaded_error"},
		},
		{
			name: "504 from a CDN, plain text", status: 504, body: "cloudflare_504.txt",
			want: recovery.Failure{Code: recovery.Server, Status: 504, RequestID: "mock-req-1", Message: "error code: 504"},
		},
		{
			name: "529 Anthropic overloaded_error", status: 529, body: "anthropic_529_overloaded_error.json",
			headers: map[string]string{"X-Request-Id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
			want: recovery.Failure{Code: recovery.Overloaded, Status: 529, RequestID: "req_011CSHoEeqs5C35K2UUqR7Fy",
				Message: "Overloaded", ProviderType: "overloaded_error", Dialect: "anthropic.overloaded_error"},
		},
		{
			name: "in-stream server_error after some text", stream: "openai_server_error.json", text: "Hel",
			want: recovery.Failure{Code: recovery.Server, RequestID: "mock-req-1",
				Message: "The server had an error while processing your request.", ProviderType: "server_error"},
		},
		{
			name: "in-stream overloaded_error", stream: "anthropic_overloaded_error.json",
			want: recovery.Failure{Code: recovery.Overloaded, RequestID: "mock-req-1",
				Message: "Overloaded", ProviderType: "overloaded_error", Dialect: "anthropic.overloaded_error"},
		},
		{
			name: "in-stream rate_limit_exceeded", stream: "openai_rate_limit_exceeded.json", text: "Hello",
			want: recovery.Failure{Code: recovery.RateLimit, RequestID: "mock-req-1",
				Message: "Rate limit reached for requests.", ProviderCode: "rate_limit_exceeded", ProviderType: "requests", Dialect: "openai.rate_limit_exceeded"},
		},
		{
			name: "in-stream context_length_exceeded", stream: "openai_context_length_exceeded.json",
			want: recovery.Failure{Code: recovery.ContextOverflow, RequestID: "mock-req-1",
				Message:      "This model's maximum context length is 8192 tokens.",
				ProviderCode: "context_length_exceeded", ProviderType: "invalid_request_error", Dialect: "openai.context_length_exceeded"},
		},
		{
			name: "in-stream unknown string code", stream: "openrouter_provider_disconnected.json", text: "Hi",
			want: recovery.Failure{Code: recovery.Server, RequestID: "mock-req-1",
				Message: "Provider disconnected unexpectedly", ProviderCode: "server_error"},
		},
		{
			name: "in-stream unknown numeric code", stream: "numeric_code.json",
			want: recovery.Failure{Code: recovery.Server, RequestID: "mock-req-1",
				Message: "boom", ProviderCode: "500"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := mockprovider.Step{Status: tt.status, Headers: tt.headers}
			if tt.body != "" {
				step.Body = bodyFixture(t, "errors/"+tt.body)
			}
			if tt.stream != "" {
				step.Text, step.Chunks = tt.text, 3
				step.StreamError = fixture(t, "stream_errors/"+tt.stream)
			}
			synctest.Test(t, func(t *testing.T) {
				p, m := newProvider(t, &mockprovider.Script{Steps: []mockprovider.Step{step}})
				err := attemptError(t, p)
				if _, ok := errors.AsType[*llm.Error](err); !ok {
					t.Fatalf("attempt error %T %v, want an *llm.Error", err, err)
				}
				got := recovery.Classify(err)
				if diff := cmp.Diff(&tt.want, got, ignoreUnexported); diff != "" {
					t.Errorf("Classify() (-want +got):\n%s", diff)
				}
				gotErr := ""
				if err := got.RetryAfterErr(); err != nil {
					gotErr = err.Error()
				}
				if gotErr != tt.wantRetryAfterErr {
					t.Errorf("RetryAfterErr() = %q, want %q", gotErr, tt.wantRetryAfterErr)
				}
				if n := m.Count(); n != 1 {
					t.Errorf("requests = %d, want 1", n)
				}
			})
		})
	}
}

// The adapter's own stream failures keep their identity through Classify.
func TestClassify_StreamFailures(t *testing.T) {
	tests := []struct {
		name string
		step mockprovider.Step
		want recovery.Failure
	}{
		{
			name: "dropped stream",
			step: mockprovider.Step{Text: "Hello", Chunks: 5, DropAfter: ptr(2)},
			want: recovery.Failure{Code: recovery.Transport,
				Message: "stream ended before the reply finished: the body ended without a finish reason or [DONE]: unexpected EOF (request mock-req-1)", RequestID: "mock-req-1"},
		},
		{
			name: "dropped before any content",
			step: mockprovider.Step{Text: "Hello", DropAfter: ptr(0)},
			want: recovery.Failure{Code: recovery.Transport,
				Message: "stream ended before the reply finished: the body ended without a finish reason or [DONE]: unexpected EOF (request mock-req-1)", RequestID: "mock-req-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, _ := newProvider(t, &mockprovider.Script{Steps: []mockprovider.Step{tt.step}})
				err := attemptError(t, p)
				if !errors.Is(err, llm.ErrIncompleteStream) {
					t.Fatalf("attempt error = %v, want one wrapping llm.ErrIncompleteStream", err)
				}
				if diff := cmp.Diff(&tt.want, recovery.Classify(err), ignoreUnexported); diff != "" {
					t.Errorf("Classify() (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// A refused connection through the real adapter and a real *http.Client:
// outside a bubble, since it dials a socket.
func TestClassify_ConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://" + addr + "/v1", APIKey: "sk-test-key", HTTPClient: &http.Client{}})
	_, err = p.Stream(t.Context(), hello)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Stream() = %v, want ECONNREFUSED", err)
	}
	want := &recovery.Failure{Code: recovery.Transport, Message: err.Error()}
	f := recovery.Classify(err)
	if diff := cmp.Diff(want, f, ignoreUnexported); diff != "" {
		t.Errorf("Classify() (-want +got):\n%s", diff)
	}
	if got, want := f.Summary(), "The connection to http://"+addr+" failed: connection refused"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

// Issue #11: a key the provider echoes anywhere (message, code, type, param,
// request id, Retry-After) is in no failure fact, no error text, and not in
// the Retry-After error that gets logged.
func TestClassify_KeyNotInFacts(t *testing.T) {
	const key = "sk-test-key"
	synctest.Test(t, func(t *testing.T) {
		p, _ := newProvider(t, &mockprovider.Script{Steps: []mockprovider.Step{{
			Status:  429,
			Body:    []byte(`{"error":{"message":"key ` + key + ` is limited","type":"` + key + `","code":"` + key + `","param":"` + key + `"}}`),
			Headers: map[string]string{"X-Request-Id": "req-" + key, "Retry-After": key},
		}}})
		err := attemptError(t, p)
		f := recovery.Classify(err)
		facts, _ := json.Marshal(f)
		texts := map[string]string{
			"facts": string(facts), "error": err.Error(), "failure": f.Error(), "summary": f.Summary(),
			"advice": f.Advice("OPENAI_API_KEY"),
		}
		if e := f.RetryAfterErr(); e != nil {
			texts["retry-after error"] = e.Error()
		} else {
			t.Error("RetryAfterErr() = nil: the redacted Retry-After is still no number")
		}
		for name, text := range texts {
			if strings.Contains(text, key) {
				t.Errorf("%s shows the key: %s", name, text)
			}
		}
		if f.RequestID != "req-[redacted]" || f.ProviderCode != "[redacted]" {
			t.Errorf("RequestID = %q, ProviderCode = %q; want the key replaced, the rest kept", f.RequestID, f.ProviderCode)
		}
	})
}

// Errors that are not provider answers are classified by identity.
func TestClassify_PlainErrors(t *testing.T) {
	given := &recovery.Failure{Code: recovery.Overloaded, Message: "given"}
	tests := []struct {
		name  string
		err   error
		want  recovery.Code
		limit string
	}{
		{"context.Canceled", context.Canceled, recovery.Aborted, ""},
		{"wrapped context.Canceled", fmt.Errorf("read stream: %w", context.Canceled), recovery.Aborted, ""},
		{"context.DeadlineExceeded", context.DeadlineExceeded, recovery.Timeout, ""},
		{"wrapped context.DeadlineExceeded", fmt.Errorf("chat completion request: %w", context.DeadlineExceeded), recovery.Timeout, ""},
		{"first-token watchdog", fmt.Errorf("%w (1m30s)", recovery.ErrFirstTokenTimeout), recovery.Timeout, recovery.LimitFirstToken},
		{"attempt timeout", fmt.Errorf("read: %w: %w", recovery.ErrAttemptTimeout, context.DeadlineExceeded), recovery.Timeout, recovery.LimitAttempt},
		{"idle watchdog", fmt.Errorf("%w (5s)", recovery.ErrIdleTimeout), recovery.Timeout, recovery.LimitIdle},
		{"incomplete stream", fmt.Errorf("%w: the body ended: %w", llm.ErrIncompleteStream, io.ErrUnexpectedEOF), recovery.Transport, ""},
		{"unexpected EOF", io.ErrUnexpectedEOF, recovery.Transport, ""},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, recovery.Transport, ""},
		{"connection refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), recovery.Transport, ""},
		{"DNS failure (a net.Error)", &net.DNSError{Err: "no such host", Name: "api.invalid", IsNotFound: true}, recovery.Transport, ""},
		{"malformed stream", fmt.Errorf("%w: undecodable chunk", llm.ErrMalformedStream), recovery.Protocol, ""},
		{"a response past the adapter's limits", &llm.LimitError{Kind: llm.LimitIdle, Limit: 1 << 20}, recovery.Protocol, ""},
		{"empty response", recovery.ErrEmptyResponse, recovery.EmptyResponse, ""},
		{"unknown", errors.New("something odd"), recovery.Unknown, ""},
		{"message text is not read", errors.New("429 rate limit exceeded: overloaded, context_length_exceeded"), recovery.Unknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.err.Error()
			if tt.want == recovery.Protocol {
				// "The provider sent a malformed reply: malformed stream: …"
				// would say it twice.
				msg = strings.TrimPrefix(msg, llm.ErrMalformedStream.Error()+": ")
			}
			want := &recovery.Failure{Code: tt.want, Message: msg, Limit: tt.limit}
			if diff := cmp.Diff(want, recovery.Classify(tt.err), ignoreUnexported); diff != "" {
				t.Errorf("Classify(%v) (-want +got):\n%s", tt.err, diff)
			}
		})
	}

	t.Run("nil", func(t *testing.T) {
		if got := recovery.Classify(nil); got != nil {
			t.Errorf("Classify(nil) = %v, want nil", got)
		}
	})
	t.Run("a Failure in the chain is returned as is", func(t *testing.T) {
		if got := recovery.Classify(fmt.Errorf("step 2: %w", given)); got != given {
			t.Errorf("Classify() = %v, want the wrapped failure %p", got, given)
		}
	})
}

// A status decides when the provider sent no words of its own: a message
// without a body is Rebound's (the status text), and never changes the
// code. The words an error inside a stream carries are the provider's: an
// overflow or an empty account said there is that, not a server error.
func TestClassify_IgnoresMessageText(t *testing.T) {
	messages := []string{
		"",
		"Rate limit exceeded, please retry after 20s",
		"The server is overloaded",
		"This model's maximum context length is 8192 tokens",
		"You exceeded your current quota",
		"Incorrect API key provided",
		"Request timed out",
	}
	tests := []struct {
		name string
		err  llm.Error
		want recovery.Code
	}{
		{"400", llm.Error{Status: 400}, recovery.InvalidRequest},
		{"401", llm.Error{Status: 401}, recovery.Auth},
		{"403", llm.Error{Status: 403}, recovery.Auth},
		{"404", llm.Error{Status: 404}, recovery.InvalidRequest},
		{"408", llm.Error{Status: 408}, recovery.Timeout},
		{"413", llm.Error{Status: 413}, recovery.InvalidRequest},
		{"422", llm.Error{Status: 422}, recovery.InvalidRequest},
		{"429", llm.Error{Status: 429}, recovery.RateLimit},
		{"500", llm.Error{Status: 500}, recovery.Server},
		{"502", llm.Error{Status: 502}, recovery.Server},
		{"503", llm.Error{Status: 503}, recovery.Server},
		{"504", llm.Error{Status: 504}, recovery.Server},
		{"529", llm.Error{Status: 529}, recovery.Overloaded},
		{"no status, not in stream", llm.Error{}, recovery.Unknown},
		{"code is case-insensitive", llm.Error{Status: 400, Code: "Context_Length_Exceeded"}, recovery.ContextOverflow},
		{"overloaded_error as a code", llm.Error{Status: 500, Code: "overloaded_error"}, recovery.Overloaded},
		{"rate_limit_error type on a 400", llm.Error{Status: 400, Type: "rate_limit_error"}, recovery.RateLimit},
		{"insufficient_quota type", llm.Error{Status: 403, Type: "insufficient_quota"}, recovery.Quota},
	}
	for _, tt := range tests {
		for _, msg := range messages {
			e := tt.err
			e.Message = msg
			if got := recovery.Classify(&e).Code; got != tt.want {
				t.Errorf("%s with message %q: code %s, want %s", tt.name, msg, got, tt.want)
			}
		}
	}
	inStream := map[string]recovery.Code{
		"": recovery.Server,
		"Rate limit exceeded, please retry after 20s":        recovery.Server,
		"The server is overloaded":                           recovery.Server,
		"This model's maximum context length is 8192 tokens": recovery.ContextOverflow,
		"You exceeded your current quota":                    recovery.Quota,
		"Incorrect API key provided":                         recovery.Server,
		"Request timed out":                                  recovery.Server,
	}
	for _, msg := range messages {
		e := llm.Error{Status: 200, InStream: true, Message: msg}
		if got := recovery.Classify(&e).Code; got != inStream[msg] {
			t.Errorf("in stream, no code, with message %q: code %s, want %s", msg, got, inStream[msg])
		}
	}
}

// Classify reads Retry-After and retry-after-ms from the provider's headers;
// an unusable one is reported, not slept on.
func TestClassify_RetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		header  http.Header
		want    *int64
		wantErr string
	}{
		{"absent", nil, nil, ""},
		{"delta seconds", http.Header{"Retry-After": {"2"}}, ptr[int64](2000), ""},
		{"retry-after-ms with a fraction", http.Header{"Retry-After-Ms": {"1500.5"}}, ptr[int64](1500), ""},
		{"HTTP date 30s ahead of the fake clock", http.Header{"Retry-After": {"Sat, 01 Jan 2000 00:00:30 GMT"}}, ptr[int64](30000), ""},
		{"invalid", http.Header{"Retry-After": {"soon"}}, nil, `invalid Retry-After header "soon": neither seconds nor an HTTP date`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { // now is 2000-01-01T00:00:00Z
				f := recovery.Classify(&llm.Error{Status: 429, Header: tt.header})
				if diff := cmp.Diff(tt.want, f.RetryAfterMs); diff != "" {
					t.Errorf("RetryAfterMs (-want +got):\n%s", diff)
				}
				gotErr := ""
				if err := f.RetryAfterErr(); err != nil {
					gotErr = err.Error()
				}
				if gotErr != tt.wantErr {
					t.Errorf("RetryAfterErr() = %q, want %q", gotErr, tt.wantErr)
				}
			})
		})
	}
}

func TestFailure_Summary(t *testing.T) {
	tests := []struct {
		f    recovery.Failure
		want string
	}{
		{recovery.Failure{Code: recovery.RateLimit, Status: 429}, "Rate limited by the provider (429)"},
		{recovery.Failure{Code: recovery.Overloaded, Status: 529}, "The provider is overloaded (529)"},
		{recovery.Failure{Code: recovery.Server, Status: 503}, "The provider had a server error (503)"},
		{recovery.Failure{Code: recovery.Timeout}, "The provider did not answer in time"},
		{recovery.Failure{Code: recovery.Timeout, Limit: recovery.LimitFirstToken}, "The provider sent nothing within recovery.first_token_timeout"},
		{recovery.Failure{Code: recovery.Timeout, Limit: recovery.LimitIdle}, "The provider's stream stalled for longer than recovery.stream_idle_timeout"},
		{recovery.Failure{Code: recovery.Transport}, "The connection to the provider failed"},
		{recovery.Failure{Code: recovery.EmptyResponse}, "The provider sent an empty reply"},
		{recovery.Failure{Code: recovery.ContextOverflow, Status: 400}, "The conversation is too long for the model (400)"},
		{recovery.Failure{Code: recovery.Auth, Status: 401}, "The provider rejected the API key (401)"},
		{recovery.Failure{Code: recovery.Quota, Status: 402}, "The provider account is out of quota (402)"},
		{recovery.Failure{Code: recovery.InvalidRequest, Status: 404}, "The provider rejected the request (404)"},
		{recovery.Failure{Code: recovery.Protocol}, "The provider sent a malformed reply"},
		{recovery.Failure{Code: recovery.Aborted}, "The request was cancelled"},
		{recovery.Failure{Code: recovery.Unknown}, "The provider request failed"},
	}
	for _, tt := range tests {
		if got := tt.f.Summary(); got != tt.want {
			t.Errorf("%s: Summary() = %q, want %q", tt.f.Code, got, tt.want)
		}
	}
}

// TestWithFacts: an error carrying its facts is classified as them, through
// wrapping, and keeps its own text and identity.
func TestWithFacts(t *testing.T) {
	f := &recovery.Failure{Code: recovery.Overloaded, Message: "given"}
	err := fmt.Errorf("step 2: %w", recovery.WithFacts(f, context.DeadlineExceeded))
	if got := recovery.Classify(err); got != f {
		t.Errorf("Classify = %+v, want the carried facts", got)
	}
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "step 2: "+context.DeadlineExceeded.Error() {
		t.Errorf("err = %v: lost its identity or text", err)
	}
	if recovery.WithFacts(nil, io.EOF) != io.EOF || recovery.WithFacts(f, nil) != nil {
		t.Error("WithFacts with nothing to carry changed the error")
	}
}

// An error inside a stream is classified as its HTTP equivalent: by the
// HTTP-like status it carries (llm sets it from the event), and, when it
// carries none, the dialect table still reads its code, type and phrases.
func TestClassify_InStreamAsItsHTTPEquivalent(t *testing.T) {
	tests := []struct {
		name    string
		err     llm.Error
		code    recovery.Code
		status  int
		dialect string
	}{
		{"no status, a dialect entry with a status", llm.Error{Status: 200, InStream: true, Type: "invalid_request_error",
			Message: "This model's maximum context length is 65536 tokens."}, recovery.ContextOverflow, 0, "deepseek.context_length"},
		{"a 429 event, a dialect entry of 429", llm.Error{Status: 429, InStream: true, Code: "Some resource has been exhausted",
			Message: "Your team has used all available credits."}, recovery.Quota, 429, "xai.credits"},
		{"a 429 event", llm.Error{Status: 429, InStream: true, Message: "slow down"}, recovery.RateLimit, 429, ""},
		{"a 400 event whose words say overflow", llm.Error{Status: 400, InStream: true, Message: "prompt is too long for this model",
			Body: []byte(`{"error":{"message":"prompt is too long for this model"}}`)}, recovery.ContextOverflow, 400, ""},
		{"a 503 event", llm.Error{Status: 503, InStream: true, Message: "busy"}, recovery.Server, 503, ""},
	}
	for _, tt := range tests {
		f := recovery.Classify(&tt.err)
		if f.Code != tt.code || f.Status != tt.status || f.Dialect != tt.dialect {
			t.Errorf("%s: code %s, status %d, dialect %q; want %s, %d, %q", tt.name, f.Code, f.Status, f.Dialect, tt.code, tt.status, tt.dialect)
		}
	}
}

// A web page where the API's answer was due says so, and not "check the
// model name": the base URL is the question. A 5xx page is a proxy's
// error in front of an API that is probably right, and keeps no advice.
func TestClassify_WebPageAdvice(t *testing.T) {
	page := []byte("<!doctype html><html><head><title>Acme Corp</title></head><body>Welcome</body></html>")
	for _, st := range []int{404, 403, 405, 400} {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://acme.invalid/v1", APIKey: "sk-test",
			HTTPClient: answerDoer{st, http.Header{"Content-Type": {"text/html; charset=utf-8"}}, page}})
		f := recovery.Classify(firstError(t, p))
		advice := f.Advice("OPENAI_API_KEY")
		if strings.Contains(advice, "model name") || !strings.Contains(advice, "web page, not an API") || f.RecognisedBy != "" {
			t.Errorf("%d page: code %s, advice %q, recognised by %q; want the web-page advice", st, f.Code, advice, f.RecognisedBy)
		}
	}
	// The page's title is the page's, not the provider's words: no class
	// reads it.
	titled := []byte("<html><head><title>Input too long: quota exceeded, content filtered</title></head></html>")
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://acme.invalid/v1", APIKey: "sk-test",
		HTTPClient: answerDoer{400, http.Header{"Content-Type": {"text/html"}}, titled}})
	if f := recovery.Classify(firstError(t, p)); f.Code != recovery.InvalidRequest || f.RecognisedBy != "" || f.ContentFilter {
		t.Errorf("400 page titled with class words: code %s, recognised by %q", f.Code, f.RecognisedBy)
	}
	p = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://acme.invalid/v1", APIKey: "sk-test",
		HTTPClient: answerDoer{502, http.Header{"Content-Type": {"text/html"}}, page}})
	if f := recovery.Classify(firstError(t, p)); f.Code != recovery.Server || f.Advice("K") != "" {
		t.Errorf("502 page: code %s, advice %q; want SERVER without advice", f.Code, f.Advice("K"))
	}
	// A JSON error is no page, whatever its Content-Type says.
	p = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://acme.invalid/v1", APIKey: "sk-test",
		HTTPClient: answerDoer{404, http.Header{"Content-Type": {"text/html"}}, []byte(`{"error":{"message":"model not found"}}`)}})
	if f := recovery.Classify(firstError(t, p)); !strings.Contains(f.Advice("K"), "model name") {
		t.Errorf("404 JSON labelled text/html: advice %q, want the model-name advice", f.Advice("K"))
	}
}

// FromProvider: the provider said it (an error body, an event, a status),
// or Rebound saw it (a refused dial, a cut stream, a watchdog).
func TestFailure_FromProvider(t *testing.T) {
	dial := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/v1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, err := range []error{dial, fmt.Errorf("%w (3s)", recovery.ErrFirstTokenTimeout), recovery.ErrEmptyResponse,
		fmt.Errorf("%w: cut", llm.ErrIncompleteStream), fmt.Errorf("%w: junk", llm.ErrMalformedStream)} {
		if recovery.Classify(err).FromProvider() {
			t.Errorf("Classify(%v).FromProvider() = true; nothing answered", err)
		}
	}
	for _, e := range []*llm.Error{{Status: 500, Message: "boom"}, {Status: 200, InStream: true, Message: "boom"}} {
		if !recovery.Classify(e).FromProvider() {
			t.Errorf("Classify(%v).FromProvider() = false; the provider said it", e)
		}
	}
}

// A gateway's upstream reason is shown, on one line, bounded, and without
// what looks like a credential; its provider name likewise.
func TestClassify_UpstreamReasonIsClean(t *testing.T) {
	raw := "upstream\x1b[31m said\nno: key sk-live-0123456789abcdef and Bearer abc.def " + strings.Repeat("x", 1000)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "Provider returned error", "code": 400,
		"metadata": map[string]any{"raw": raw, "provider_name": "Up\u0007stream " + strings.Repeat("n", 200)}}})
	f := recovery.Classify(&llm.Error{Status: 400, Message: "Provider returned error", Body: body})
	for _, bad := range []string{"\x1b", "\n", "\u0007", "sk-live-0123456789abcdef", "abc.def"} {
		if strings.Contains(f.Message, bad) {
			t.Errorf("message %q holds %q", f.Message, bad)
		}
	}
	if !strings.HasPrefix(f.Message, "Provider returned error (Up stream nnn") || !strings.Contains(f.Message, "upstream [31m said no: key [redacted] and [redacted]") {
		t.Errorf("message %q: want the cleaned upstream reason after the provider's", f.Message)
	}
	if n := len([]rune(f.Message)); n > 450 {
		t.Errorf("message is %d runes long; the upstream part is bounded", n)
	}
}

// A 413 that no class reads (a body over a proxy's limit, Anthropic's
// request_too_large in bytes) says the request is too large, not "check the
// model name", whether it came as JSON or as a proxy's page.
func TestClassify_413Advice(t *testing.T) {
	for _, c := range []struct {
		ctype string
		body  string
	}{
		{"application/json", `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`},
		{"text/html", "<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>"},
	} {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://proxy.invalid/v1", APIKey: "sk-test",
			HTTPClient: answerDoer{413, http.Header{"Content-Type": {c.ctype}}, []byte(c.body)}})
		f := recovery.Classify(firstError(t, p))
		if a := f.Advice("K"); f.Code != recovery.InvalidRequest || !strings.Contains(a, "too large for the server") {
			t.Errorf("413 %s: code %s, advice %q", c.ctype, f.Code, a)
		}
	}
}

// Our key, echoed inside a gateway's forwarded upstream body, is redacted
// before the upstream's reason is shown.
func TestClassify_UpstreamReasonWithoutOurKey(t *testing.T) {
	const key = "zz-our-own-key-0123456789"
	raw, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "key " + key + " has no credits left"}})
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "Provider returned error", "code": 402,
		"metadata": map[string]any{"raw": string(raw), "provider_name": key}}})
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://gw.invalid/v1", APIKey: key,
		HTTPClient: answerDoer{402, http.Header{"Content-Type": {"application/json"}}, body}})
	f := recovery.Classify(firstError(t, p))
	if strings.Contains(f.Message, key) || !strings.Contains(f.Message, "has no credits left") {
		t.Errorf("message %q: want the upstream's reason without the key", f.Message)
	}
}

// HowRecognised names what decided the code, most specific first.
func TestHowRecognised(t *testing.T) {
	tests := []struct {
		dialect, by string
		status      int
		provider    bool
		want        string
	}{
		{"", "words:quota", 429, true, "words:quota"},
		{"openai.insufficient_quota", "", 429, true, "dialect:openai.insufficient_quota"},
		{"", "", 503, true, "status"},
		{"", "", 0, true, "in-stream"},
		{"", "", 0, false, ""},
	}
	for _, tt := range tests {
		if got := recovery.HowRecognised(tt.dialect, tt.by, tt.status, tt.provider); got != tt.want {
			t.Errorf("HowRecognised(%q, %q, %d, %v) = %q, want %q", tt.dialect, tt.by, tt.status, tt.provider, got, tt.want)
		}
	}
}

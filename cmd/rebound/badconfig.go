package main

import (
	"context"
	"io"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
)

// configErrorMetaKey names, in initialize's agentCapabilities._meta, the
// configuration error that keeps Rebound from serving sessions.
const configErrorMetaKey = "rebound/configError"

// codeConfigError is the JSON-RPC error code of a method failed by the
// configuration error: one of the codes JSON-RPC leaves to the server, and
// not -32603, which codecompanion.nvim shows nothing of.
const codeConfigError = -32010

// serveBadConfig serves ACP when the configuration could not be loaded:
// editors such as agent-shell and codecompanion throw a failed agent's
// stderr away, so an exit before initialize would hide the error. It
// answers initialize and fails every session method with the error's text.
func serveBadConfig(ctx context.Context, cfgErr error, stdin io.Reader, stdout io.Writer, log zerolog.Logger) error {
	a := badConfigAgent{err: &acp.RequestError{Code: codeConfigError, Message: cfgErr.Error()}}
	srv := acp.NewServer(a, acp.Config{Version: version(), Logger: log,
		CapabilitiesMeta: acp.Meta{configErrorMetaKey: cfgErr.Error()}})
	return srv.Serve(ctx, stdin, stdout)
}

// badConfigAgent fails every method with the configuration error. It
// implements the optional session methods too, so each of them shows the
// error rather than "method not found".
type badConfigAgent struct{ err error }

func (b badConfigAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{}, b.err
}

func (b badConfigAgent) LoadSession(context.Context, acp.LoadSessionRequest, acp.Client) (acp.LoadSessionResponse, error) {
	return acp.LoadSessionResponse{}, b.err
}

func (b badConfigAgent) Prompt(context.Context, acp.PromptRequest, acp.Client) (acp.PromptResponse, error) {
	return acp.PromptResponse{}, b.err
}

func (b badConfigAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, b.err
}

func (b badConfigAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, b.err
}

func (b badConfigAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, b.err
}

func (b badConfigAgent) DeleteSession(context.Context, acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	return acp.DeleteSessionResponse{}, b.err
}

func (b badConfigAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest, acp.Client) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, b.err
}

func (b badConfigAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest, acp.Client) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, b.err
}

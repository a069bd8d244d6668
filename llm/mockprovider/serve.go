package mockprovider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server is a Mock listening on a TCP address.
type Server struct {
	// Addr is the bound address, e.g. "127.0.0.1:41234".
	Addr string

	srv    *http.Server
	cancel context.CancelFunc
	done   chan error
}

// Serve listens on addr ("127.0.0.1:0" picks a free port) and serves m
// until ctx ends or Close is called. Requests' contexts derive from ctx, so
// stalled streams end when the server does.
func Serve(ctx context.Context, addr string, m *Mock) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{
		Addr:   ln.Addr().String(),
		cancel: cancel,
		done:   make(chan error, 1),
		srv: &http.Server{
			Handler:           m,
			BaseContext:       func(net.Listener) context.Context { return ctx },
			ReadHeaderTimeout: 10 * time.Second,
		},
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { s.srv.Close() })
	return s, nil
}

// BaseURL is the API root to give an OpenAI client: "http://<addr>/v1".
func (s *Server) BaseURL() string { return "http://" + s.Addr + "/v1" }

// Close stops the server at once, ending open streams, and waits for the
// listener to be released.
func (s *Server) Close() error {
	s.cancel()
	err := s.srv.Close()
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && serr != nil {
		return serr
	}
	s.done <- http.ErrServerClosed // Close is idempotent
	return err
}

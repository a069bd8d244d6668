package mcp

import (
	"context"
	"log/slog"

	"github.com/rs/zerolog"
)

// slogHandler sends the SDK's log/slog records to zerolog. The SDK's
// warnings and errors are about a server misbehaving, not about Rebound, so
// they are logged as warnings; everything else is debug.
type slogHandler struct {
	log     zerolog.Logger
	secrets redactor // the SDK's messages may quote the server's URL
	attrs   []slog.Attr
	group   string
}

func newSlogLogger(log zerolog.Logger, secrets redactor) *slog.Logger {
	return slog.New(&slogHandler{log: log, secrets: secrets})
}

func (h *slogHandler) level(l slog.Level) zerolog.Level {
	if l >= slog.LevelWarn {
		return zerolog.WarnLevel
	}
	return zerolog.DebugLevel
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= h.level(l) && zerolog.GlobalLevel() <= h.level(l)
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.WithLevel(h.level(r.Level))
	for _, a := range h.attrs {
		ev = ev.Str(a.Key, h.secrets.redact(a.Value.Resolve().String()))
	}
	r.Attrs(func(a slog.Attr) bool {
		ev = ev.Str(h.key(a.Key), h.secrets.redact(a.Value.Resolve().String()))
		return true
	})
	ev.Str("source", "go-sdk").Msg(h.secrets.redact(r.Message))
	return nil
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	h2.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range attrs {
		a.Key = h.key(a.Key)
		h2.attrs = append(h2.attrs, a)
	}
	return &h2
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.group = h.key(name)
	return &h2
}

func (h *slogHandler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

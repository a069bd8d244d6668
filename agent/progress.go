package agent

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
)

// RetryMetaKey is the `_meta` key under which retry progress
// (recovery.RetryProgress) travels on session_info_update (every client)
// and notice (clients that advertised session.notices) updates.
const RetryMetaKey = recovery.ProgressMetaKey

// RefusalMetaKey is the `_meta` key of a prompt answer with stopReason
// "refusal" that the provider's content filter caused: the failure facts,
// whose message is the provider's reason.
const RefusalMetaKey = "rebound/refusal"

// CapabilitiesMeta is advertised in agentCapabilities._meta so a client can
// tell that retry progress will arrive, and in which shape.
func CapabilitiesMeta() acp.Meta {
	return acp.Meta{RetryMetaKey: map[string]any{"version": 1, "phases": recovery.Phases}}
}

// notifier is a turn's best-effort send of a status update to c: a
// client that went away must not turn a recovering request into a failed
// one.
func notifier(log *zerolog.Logger, c acp.Client, sessionID string) func(context.Context, acp.SessionUpdate) {
	return func(ctx context.Context, u acp.SessionUpdate) {
		notify(ctx, log, c, sessionID, u, "could not send a status update")
	}
}

// notify is the one best-effort send of an update: one the editor misses
// (it went away, or its output is stuck) fails nothing, so the error is
// only logged, as failed. A cancelled ctx still sends: the spec lets a
// cancelled turn send its last updates.
func notify(ctx context.Context, log *zerolog.Logger, c acp.Client, sessionID string, u acp.SessionUpdate, failed string) {
	if err := c.Update(context.WithoutCancel(ctx), sessionID, u); err != nil {
		log.Debug().Err(err).Str("session", sessionID).Msg(failed)
	}
}

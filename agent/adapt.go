package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// Errors that end a request-changing recovery.
var (
	// ErrPromptTooLong: the overflowing request has nothing to compact but
	// the prompt itself.
	ErrPromptTooLong = errors.New("the prompt itself is too long for the model, and there is no older history to summarise")
	// ErrCompactionNotSmaller: the summary did not make the request smaller.
	ErrCompactionNotSmaller = errors.New("compacting the conversation did not make the request smaller")
	// ErrNoImages: a provider said the model takes no images, but the
	// request has none to remove.
	ErrNoImages = errors.New("the request has no images to remove")
	// ErrSummaryUnfinished: the summary request ended without the model
	// finishing the summary (cut at the output limit, filtered, ...). A
	// summary that may be cut would become the whole older conversation for
	// every later request, so it is never used.
	ErrSummaryUnfinished = errors.New("the summary did not finish")
)

var _ recovery.Adapter = (*turn)(nil)

// Adapt changes the next request as a retry's action says.
func (t *turn) Adapt(ctx context.Context, r recovery.Retry) error {
	switch r.Action {
	case recovery.ActionFallback:
		model := t.agent.cfg.Recovery.FallbackModel
		t.req.fallBack(model, t.agent.menu.reasoningEffort(model, t.s.current().thought))
		t.agent.cfg.Logger.Warn().Str("session", t.s.id).Int("turn", t.number).Str("model", model).Msg("switching to the fallback model for this turn")
		return nil
	case recovery.ActionCompact:
		return t.compact(ctx)
	case recovery.ActionStripImages:
		return t.msgs.stripImages()
	}
	return fmt.Errorf("unknown recovery action %q", r.Action)
}

// promptImages collects the prompt's image blocks for the model.
func promptImages(blocks []acp.ContentBlock) []llm.Image {
	var imgs []llm.Image
	for i, b := range blocks {
		if b.Type != "image" || b.Data == "" {
			continue
		}
		imgs = append(imgs, llm.Image{Name: imageName(b, i), MimeType: b.MimeType, Data: b.Data})
	}
	return imgs
}

// imageName is how an image block is named to the model: its URI, else its
// position in the prompt.
func imageName(b acp.ContentBlock, i int) string {
	if b.URI != "" {
		return b.URI
	}
	return fmt.Sprintf("image %d", i+1)
}

// ownRetry records and announces a retry the agent decides itself (after a
// truncated reply): the same llm/retry and llm/retry-started as the
// executor's, in the same chain, with no wait.
func (t *turn) ownRetry(ctx context.Context, policy string, action recovery.Action, n, maxN int) error {
	if t.chain.ID == "" {
		t.chain.ID = recovery.NewRetryID()
	}
	t.chain.Retries++
	r := recovery.Retry{ID: t.chain.ID, N: t.chain.Retries, Max: maxN, Policy: policy, PolicyN: n, Action: action}
	if err := t.Scheduled(ctx, r); err != nil {
		return fmt.Errorf("record retry: %w", err)
	}
	if err := t.Started(ctx, r); err != nil {
		return fmt.Errorf("record retry: %w", err)
	}
	return nil
}

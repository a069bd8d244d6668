package agent

import (
	"errors"
	"fmt"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
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

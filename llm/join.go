package llm

// Stage 3 of a stream, joining (see stream): a burst of tiny deltas that
// arrived together becomes one chunk, so one record and one update
// downstream. Content joins content, reasoning joins reasoning, and a tool
// call's argument fragments join into the fragment that started them;
// deltas of another kind, a finish reason or usage end the chunk. It
// joins only chunks already read from the network (chunkSource.read
// without waiting): a delta that arrives alone is returned at once.
//
// It takes nothing from go-openai; whether the next event is there is
// known from the SSE stage's count of the lines go-openai has buffered
// (events.ready).

// maxPiece bounds the text of the deltas the joiner joins.
const maxPiece = 32 << 10

// chunkSource is what the joiner reads: decoded chunks, each carrying
// something (a delta, a finish reason or usage).
type chunkSource interface {
	// read returns the next chunk. Unless wait, it returns false rather
	// than wait for one. Once it has returned an error it returns that
	// error on every call, waiting or not.
	read(wait bool) (Chunk, bool, error)
}

// joiner joins the chunks of a chunkSource.
type joiner struct {
	src    chunkSource
	off    bool // every chunk on its own: a benchmark's baseline
	peek   Chunk
	peeked bool   // peek holds the next chunk, read while joining
	buf    []byte // text being joined, reused
}

// Kinds of delta a chunk carries; deltas of one kind are joined.
const (
	kindContent = 1 << iota
	kindReasoning
	kindTools
)

func kindOf(c Chunk) int {
	k := 0
	if c.Content != "" {
		k |= kindContent
	}
	if c.Reasoning != "" {
		k |= kindReasoning
	}
	if len(c.ToolCalls) > 0 {
		k |= kindTools
	}
	return k
}

// next returns the next chunk joined with the chunks of the same kind that
// arrived with it, up to maxPiece bytes of text. A finish reason or usage
// after the deltas is joined too, and ends the chunk. An error is
// returned once the chunks before it have been.
func (j *joiner) next() (Chunk, error) {
	c, err := j.take()
	if err != nil || j.off || c.FinishReason != "" || c.Usage != nil {
		return c, err
	}
	kind := kindOf(c)
	if kind != kindContent && kind != kindReasoning && kind != kindTools {
		return c, nil
	}
	jt := joint{c: c, kind: kind, text: j.buf[:0]}
	for size := deltaSize(c); size < maxPiece; {
		n, ok := j.following(kind)
		if !ok {
			break // an error is the source's, for the next call
		}
		jt.add(n)
		size += deltaSize(n)
		if n.FinishReason != "" || n.Usage != nil {
			break
		}
	}
	c = jt.chunk()
	j.buf = jt.text[:0]
	return c, nil
}

// take returns the chunk read ahead, or waits for the next one.
func (j *joiner) take() (Chunk, error) {
	if j.peeked {
		j.peeked = false
		return j.peek, nil
	}
	c, _, err := j.src.read(true)
	return c, err
}

// following returns the next chunk if it is already there and can join a
// chunk of kind: of that kind, or of none (a finish or usage only).
func (j *joiner) following(kind int) (Chunk, bool) {
	if !j.peeked {
		n, ok, err := j.src.read(false)
		if !ok || err != nil {
			return Chunk{}, false
		}
		j.peek, j.peeked = n, true
	}
	if k := kindOf(j.peek); k != 0 && k != kind {
		return Chunk{}, false
	}
	j.peeked = false
	return j.peek, true
}

// joint is a chunk being joined. text holds the joined content or
// reasoning, or the arguments of the last tool call; it is started from c
// only once a second chunk joins, so a lone chunk is not copied.
type joint struct {
	c       Chunk
	kind    int
	text    []byte
	started bool
}

func (jt *joint) add(n Chunk) {
	c := &jt.c
	if !jt.started {
		jt.started = true
		switch jt.kind {
		case kindContent:
			jt.text = append(jt.text, c.Content...)
		case kindReasoning:
			jt.text = append(jt.text, c.Reasoning...)
		case kindTools:
			jt.text = append(jt.text, c.ToolCalls[len(c.ToolCalls)-1].Arguments...)
		}
	}
	switch jt.kind {
	case kindContent:
		jt.text = append(jt.text, n.Content...)
	case kindReasoning:
		jt.text = append(jt.text, n.Reasoning...)
	case kindTools:
		jt.addCalls(n.ToolCalls)
	}
	c.FinishReason, c.Usage = n.FinishReason, n.Usage
}

// addCalls joins tool-call fragments: more arguments for the last call's
// slot join its arguments; a fragment with an id or a name may start a new
// call (see Reply.Add), so it is kept as a fragment of its own.
func (jt *joint) addCalls(ds []ToolCallDelta) {
	c := &jt.c
	for _, d := range ds {
		last := &c.ToolCalls[len(c.ToolCalls)-1]
		if d.ID == "" && d.Name == "" && d.Index == last.Index && d.Unindexed == last.Unindexed {
			jt.text = append(jt.text, d.Arguments...)
			continue
		}
		last.Arguments = string(jt.text)
		jt.text = append(jt.text[:0], d.Arguments...)
		c.ToolCalls = append(c.ToolCalls, d)
	}
}

// chunk is the joined chunk.
func (jt *joint) chunk() Chunk {
	c := jt.c
	if !jt.started {
		return c
	}
	switch jt.kind {
	case kindContent:
		c.Content = string(jt.text)
	case kindReasoning:
		c.Reasoning = string(jt.text)
	case kindTools:
		c.ToolCalls[len(c.ToolCalls)-1].Arguments = string(jt.text)
	}
	return c
}

func deltaSize(c Chunk) int {
	n := len(c.Content) + len(c.Reasoning)
	for _, d := range c.ToolCalls {
		n += len(d.ID) + len(d.Name) + len(d.Arguments)
	}
	return n
}

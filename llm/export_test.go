package llm

// NoJoin makes o's streams return every event as a chunk of its own, as
// they did before deltas were joined: the baseline of the benchmarks.
func NoJoin(o *OpenAI) { o.noJoin = true }

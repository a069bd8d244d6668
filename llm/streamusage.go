package llm

import (
	"net/url"
	"strings"
)

// StreamUsage is whether a request asks for a usage chunk at the end of the
// stream (stream_options.include_usage). Some OpenAI-compatible servers
// refuse a request carrying stream_options, so by default only the hosts
// known to accept it are asked.
type StreamUsage string

const (
	// StreamUsageAuto asks the hosts in StreamUsageHosts and loopback
	// servers (vLLM, llama.cpp and Ollama accept it).
	StreamUsageAuto StreamUsage = "auto"
	StreamUsageOn   StreamUsage = "on"
	StreamUsageOff  StreamUsage = "off"
)

// StreamUsageHosts are the providers known to accept stream_options.
// docs/providers.md lists them.
var StreamUsageHosts = []string{
	"api.openai.com",
	"api.deepseek.com",
	"openrouter.ai",
	"api.groq.com",
	"api.mistral.ai",
	"api.together.xyz",
	"generativelanguage.googleapis.com",
}

// includeUsage reports whether requests to baseURL ask for usage under mode
// ("" is StreamUsageAuto).
func includeUsage(baseURL string, mode StreamUsage) bool {
	switch mode {
	case StreamUsageOn:
		return true
	case StreamUsageOff:
		return false
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	for _, h := range StreamUsageHosts {
		if host == h {
			return true
		}
	}
	return false
}

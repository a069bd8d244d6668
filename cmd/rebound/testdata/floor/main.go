// Command floor is the least an ACP agent does per streamed chunk, for
// BenchmarkIngest_PacedFloor to measure Rebound against: it answers
// initialize and session/new, and for a prompt streams one chat completion
// from OPENAI_BASE_URL with net/http, and for each SSE chunk decodes it,
// appends a record to a file and writes a session/update line to stdout.
// No recovery, no checks, no goroutines of its own. Standard library only.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

type request struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	reply := func(id int, result any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		out.Write(append(b, '\n'))
		out.Flush()
	}
	log, err := os.OpenFile(filepath.Join(os.Getenv("REBOUND_STATE_DIR"), "floor.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		panic(err)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var req request
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		switch req.Method {
		case "initialize":
			reply(*req.ID, map[string]any{"protocolVersion": 1})
		case "session/new":
			reply(*req.ID, map[string]any{"sessionId": "floor"})
		case "session/prompt":
			stream(out, log)
			reply(*req.ID, map[string]any{"stopReason": "end_turn"})
		}
	}
}

func stream(out *bufio.Writer, log *os.File) {
	body, _ := json.Marshal(map[string]any{"model": "m", "stream": true, "messages": []map[string]string{{"role": "user", "content": "go"}}})
	req, _ := http.NewRequest("POST", strings.TrimSuffix(os.Getenv("OPENAI_BASE_URL"), "/")+"/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			return
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(data, &chunk) != nil || len(chunk.Choices) == 0 || chunk.Choices[0].Delta.Content == "" {
			continue
		}
		text := chunk.Choices[0].Delta.Content
		rec, _ := json.Marshal(map[string]any{"type": "shown", "text": text})
		log.Write(append(rec, '\n'))
		upd, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
			"sessionId": "floor", "update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}}}})
		out.Write(append(upd, '\n'))
		out.Flush()
	}
}

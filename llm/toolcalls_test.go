package llm_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/llm"
)

// Tool calls are assembled by identity, in order of appearance: the shapes
// are those of testdata/providers (the corpus replays them over HTTP); these
// pin Reply.Add on its own.
func TestReply_AddAssemblesToolCalls(t *testing.T) {
	const a, b = `{"path":"a.go"}`, `{"path":"b.go"}`
	tests := []struct {
		name   string
		deltas [][]llm.ToolCallDelta // one chunk each
		want   []llm.ToolCall
	}{
		{
			name: "OpenAI: index 0 and 1, arguments in pieces",
			deltas: [][]llm.ToolCallDelta{
				{{Index: 0, ID: "call_a", Name: "read_file"}},
				{{Index: 0, Arguments: `{"path":`}},
				{{Index: 0, Arguments: `"a.go"}`}},
				{{Index: 1, ID: "call_b", Name: "read_file"}},
				{{Index: 1, Arguments: b}},
			},
			want: []llm.ToolCall{{ID: "call_a", Name: "read_file", Arguments: a}, {ID: "call_b", Name: "read_file", Arguments: b}},
		},
		{
			name: "a first index of 1 leaves no hole",
			deltas: [][]llm.ToolCallDelta{
				{{Index: 1, ID: "toolu_1", Name: "read_file"}},
				{{Index: 1, Arguments: a}},
			},
			want: []llm.ToolCall{{ID: "toolu_1", Name: "read_file", Arguments: a}},
		},
		{
			name: "no index and no id: a second whole call to the same tool",
			deltas: [][]llm.ToolCallDelta{
				{{Unindexed: true, Name: "read_file", Arguments: a}},
				{{Unindexed: true, Name: "read_file", Arguments: b}},
			},
			want: []llm.ToolCall{{Name: "read_file", Arguments: a}, {Name: "read_file", Arguments: b}},
		},
		{
			name: "no index: arguments in pieces continue the latest call",
			deltas: [][]llm.ToolCallDelta{
				{{Unindexed: true, ID: "c1", Name: "read_file", Arguments: `{"pa`}},
				{{Unindexed: true, Arguments: `th":"a.go"}`}},
			},
			want: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: a}},
		},
		{
			name: "the same index with a new id is a new call",
			deltas: [][]llm.ToolCallDelta{
				{{Index: 0, ID: "c1", Name: "read_file", Arguments: a}},
				{{Index: 0, ID: "c2", Name: "list_dir", Arguments: `{}`}},
			},
			want: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: a}, {ID: "c2", Name: "list_dir", Arguments: `{}`}},
		},
		{
			name: "the same index with a new name is a new call",
			deltas: [][]llm.ToolCallDelta{
				{{Index: 0, Name: "read_file", Arguments: a}},
				{{Index: 0, Name: "list_dir", Arguments: `{}`}},
			},
			want: []llm.ToolCall{{Name: "read_file", Arguments: a}, {Name: "list_dir", Arguments: `{}`}},
		},
		{
			name: "a name repeated on every piece is one call",
			deltas: [][]llm.ToolCallDelta{
				{{Index: 0, ID: "c1", Name: "read_file", Arguments: `{"path"`}},
				{{Index: 0, Name: "read_file", Arguments: `:"a.go"}`}},
			},
			want: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: a}},
		},
		{
			name: "an empty fragment makes no call",
			deltas: [][]llm.ToolCallDelta{
				{{Index: 0}},
				{{Index: 1, ID: "c1", Name: "read_file", Arguments: a}},
			},
			want: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: a}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r llm.Reply
			for _, d := range tt.deltas {
				if err := r.Add(llm.Chunk{ToolCalls: d}); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, r.ToolCalls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReply_AddBoundsToolCallCount(t *testing.T) {
	var r llm.Reply
	for i := range llm.MaxToolCalls {
		if err := r.Add(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: string(rune('a'+i%26)) + string(rune('0'+i/26)), Name: "f"}}}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := r.Add(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "one-more", Name: "f"}}}); err == nil {
		t.Errorf("call %d accepted, want ErrMalformedStream", llm.MaxToolCalls+1)
	}
}

package demo

import (
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
)

func TestToolContent(t *testing.T) {
	long := strings.Repeat("é", 101)
	for _, c := range []struct {
		list []acp.ToolCallContent
		want string
	}{
		{nil, ""},
		{[]acp.ToolCallContent{acp.ContentText("```\n\n  one  \n```\n")}, "one"},
		{[]acp.ToolCallContent{acp.ContentText("one\ntwo")}, "one …"},
		{[]acp.ToolCallContent{acp.ContentText(long)}, strings.Repeat("é", 100) + " …"},
		{[]acp.ToolCallContent{acp.ContentText("```\n```")}, ""},
		{[]acp.ToolCallContent{{Type: acp.ToolContentContent, Content: &acp.ContentBlock{Type: "image", Text: "x"}}}, ""},
		{[]acp.ToolCallContent{{Type: acp.ToolContentDiff, Path: "/p/sub/a.go"}, {Type: acp.ToolContentDiff, Path: "/q/b.go"}, {Type: acp.ToolContentTerminal}},
			"diff of sub/a.go; diff of /q/b.go; terminal"},
	} {
		if got := toolContent("/p", c.list); got != c.want {
			t.Errorf("toolContent(%+v) = %q, want %q", c.list, got, c.want)
		}
	}
}

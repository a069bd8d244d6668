package tools_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/tools"
)

func TestApplyEdit(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		old, new string
		all      bool
		want     string
		wantN    int
		errHas   string
	}{
		{name: "one match", content: "a b c", old: "b", new: "B", want: "a B c", wantN: 1},
		{name: "delete", content: "a b c", old: " b", new: "", want: "a c", wantN: 1},
		{name: "multi-line", content: "func f() {\n\treturn 1\n}\n", old: "\treturn 1\n", new: "\treturn 2\n", want: "func f() {\n\treturn 2\n}\n", wantN: 1},
		{name: "no match", content: "a b c", old: "x", new: "y", errHas: "old_text was not found"},
		{name: "whitespace must match", content: "\tx := 1", old: "    x := 1", new: "x := 2", errHas: "including whitespace"},
		{name: "crlf hint", content: "a\r\nb\r\n", old: "a\nb", new: "c", errHas: `Windows line endings`},
		{name: "several without replace_all", content: "x x x", old: "x", new: "y", errHas: "matches 3 places"},
		{name: "replace_all", content: "x x x", old: "x", new: "y", all: true, want: "y y y", wantN: 3},
		{name: "replace_all with one", content: "x", old: "x", new: "y", all: true, want: "y", wantN: 1},
		{name: "empty old_text", content: "x", old: "", new: "y", errHas: "old_text is empty"},
		{name: "same text", content: "x", old: "x", new: "x", errHas: "the same"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, err := tools.ApplyEdit(tt.content, tt.old, tt.new, tt.all)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("ApplyEdit error = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || n != tt.wantN {
				t.Errorf("ApplyEdit = %q, %d; want %q, %d", got, n, tt.want, tt.wantN)
			}
		})
	}
}

// numbered returns n lines "line 1\n" … "line n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestFormatRead(t *testing.T) {
	tests := []struct {
		name          string
		content       string
		offset, limit int
		want          string
	}{
		{name: "whole small file", content: "a\nb\n", want: "a\nb\n"},
		{name: "no final newline", content: "a\nb", want: "a\nb"},
		{name: "empty", content: "", want: "[the file is empty]"},
		{name: "offset and limit", content: numbered(10), offset: 3, limit: 2,
			want: "line 3\nline 4\n[showing lines 3–4 of 10; call read_file with offset 5 to read on]"},
		{name: "offset to the end", content: numbered(5), offset: 4, want: "line 4\nline 5\n"},
		{name: "limit past the end", content: numbered(3), offset: 2, limit: 50, want: "line 2\nline 3\n"},
		{name: "limit reaching a line without newline", content: "a\nb\nc", limit: 2,
			want: "a\nb\n[showing lines 1–2 of 3; call read_file with offset 3 to read on]"},
		{name: "offset past the end", content: numbered(5), offset: 9, want: "[the file has 5 lines; offset 9 is past the end]"},
		{name: "offset zero means one", content: "a\nb\n", offset: 0, limit: 1,
			want: "a\n[showing lines 1–1 of 2; call read_file with offset 2 to read on]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tools.FormatRead(tt.content, tt.offset, tt.limit)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FormatRead (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatRead_Caps(t *testing.T) {
	t.Run("default line cap", func(t *testing.T) {
		got := tools.FormatRead(numbered(9000), 0, 0)
		wantEnd := "line 2000\n[showing lines 1–2000 of 9000; call read_file with offset 2001 to read on]"
		if !strings.HasSuffix(got, wantEnd) {
			t.Errorf("FormatRead ends %q, want %q", tail(got), wantEnd)
		}
		if n := strings.Count(got, "\n"); n != 2000 {
			t.Errorf("FormatRead returned %d lines of text, want 2000", n)
		}
	})
	t.Run("byte cap at a line boundary", func(t *testing.T) {
		line := strings.Repeat("x", 1023) + "\n" // 1 KiB lines
		got := tools.FormatRead(strings.Repeat(line, 1000), 0, 0)
		want := strings.Repeat(line, 256) + "[showing lines 1–256 of 1000; call read_file with offset 257 to read on]"
		if got != want {
			t.Errorf("FormatRead ends %q, want %q", tail(got), tail(want))
		}
	})
	t.Run("byte cap applies with a limit too", func(t *testing.T) {
		line := strings.Repeat("x", 1023) + "\n"
		got := tools.FormatRead(strings.Repeat(line, 1000), 11, 900)
		if !strings.HasSuffix(got, "[showing lines 11–266 of 1000; call read_file with offset 267 to read on]") {
			t.Errorf("FormatRead ends %q", tail(got))
		}
	})
	t.Run("long line cut", func(t *testing.T) {
		long := strings.Repeat("é", 5000) // 10000 bytes, two bytes a rune
		got := tools.FormatRead("a\n"+long+"\nb\n", 0, 0)
		wantMid := "\n" + strings.Repeat("é", 2048) + " … [line cut: 10000 bytes in all]\nb\n"
		if !strings.HasPrefix(got, "a\n") || !strings.HasSuffix(got, wantMid) {
			t.Errorf("FormatRead = %q…%q, want the long line cut at 4 KiB", got[:10], tail(got))
		}
	})
}

func tail(s string) string {
	if len(s) > 120 {
		return "…" + s[len(s)-120:]
	}
	return s
}

func TestIsBinary(t *testing.T) {
	// A text that is long enough to be cut inside a 3-byte character.
	cutRune := append(bytes.Repeat([]byte("a"), 8191), "€"...)
	tests := []struct {
		name string
		in   []byte
		want bool
	}{
		{"empty", nil, false},
		{"ascii", []byte("hello\nworld\n"), false},
		{"utf-8", []byte("grüße, 世界"), false},
		{"nul", []byte("abc\x00def"), true},
		{"invalid utf-8", []byte("abc\xff\xfe"), true},
		{"latin-1", []byte("gr\xfc\xdfe"), true},
		{"truncated rune at the end of the data", []byte("abc\xe2\x82"), true},
		{"rune cut by the sniff window", cutRune, false},
		{"nul after the sniff window", append(bytes.Repeat([]byte("a"), 9000), 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tools.IsBinary(tt.in); got != tt.want {
				t.Errorf("IsBinary = %v, want %v", got, tt.want)
			}
		})
	}
}

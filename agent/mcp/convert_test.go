package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestNamer_Name(t *testing.T) {
	long := strings.Repeat("t", 80)
	tests := []struct {
		name  string
		calls [][2]string // server, tool, in order
		want  []string
	}{
		{
			name:  "plain",
			calls: [][2]string{{"github", "create_issue"}},
			want:  []string{"mcp__github__create_issue"},
		},
		{
			name:  "other characters become underscores, one per rune",
			calls: [][2]string{{"My Server", "files.read/é"}},
			want:  []string{"mcp__My_Server__files_read__"},
		},
		{
			name:  "a collision after sanitising gets a hash suffix",
			calls: [][2]string{{"s", "a.b"}, {"s", "a_b"}},
			want:  []string{"mcp__s__a_b", "mcp__s__a_b_" + hash8("s", "a_b")},
		},
		{
			name:  "too long is cut and given a hash suffix",
			calls: [][2]string{{"s", long}},
			want:  []string{("mcp__s__" + long)[:64-9] + "_" + hash8("s", long)},
		},
		{
			name:  "two long names with the same prefix stay apart",
			calls: [][2]string{{"s", long + "a"}, {"s", long + "b"}},
			want: []string{
				("mcp__s__" + long)[:64-9] + "_" + hash8("s", long+"a"),
				("mcp__s__" + long)[:64-9] + "_" + hash8("s", long+"b"),
			},
		},
		{
			name:  "the same tool on two servers",
			calls: [][2]string{{"a", "x"}, {"b", "x"}},
			want:  []string{"mcp__a__x", "mcp__b__x"},
		},
		{
			name:  "a name that is already someone's suffixed name",
			calls: [][2]string{{"s", "a.b"}, {"s", "a_b_" + hash8("s", "a_b")}, {"s", "a_b"}},
			want: []string{
				"mcp__s__a_b",
				"mcp__s__a_b_" + hash8("s", "a_b"),
				"mcp__s__a_b_" + hash8("s", "a_b") + "_1",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n namer
			var got []string
			for _, c := range tt.calls {
				name := n.name(c[0], c[1])
				if !openAIName.MatchString(name) {
					t.Errorf("name(%q, %q) = %q, not a valid OpenAI tool name", c[0], c[1], name)
				}
				got = append(got, name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

// hash8 is the suffix's hash: the first 4 bytes of SHA-256 of the
// original names, so a name is the same in every session.
func hash8(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:4])
}

func TestToolDef(t *testing.T) {
	hugeSchema := map[string]any{"type": "object", "description": strings.Repeat("x", MaxSchema)}
	longDesc := strings.Repeat("é", MaxDescription) // 2 bytes a rune: must be cut on a rune boundary
	tests := []struct {
		name       string
		tool       *sdk.Tool
		wantErr    string
		wantDesc   string
		wantParams string
	}{
		{
			name:       "object schema",
			tool:       &sdk.Tool{Name: "t", Description: "d", InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}},
			wantDesc:   "d",
			wantParams: `{"properties":{},"type":"object"}`,
		},
		{
			name:       "a missing type is made object",
			tool:       &sdk.Tool{Name: "t", InputSchema: map[string]any{"properties": map[string]any{}}},
			wantParams: `{"properties":{},"type":"object"}`,
		},
		{
			name:       "title stands in for a missing description",
			tool:       &sdk.Tool{Name: "t", Title: "The T", InputSchema: map[string]any{"type": "object"}},
			wantDesc:   "The T",
			wantParams: `{"type":"object"}`,
		},
		{
			name:    "schema of another type",
			tool:    &sdk.Tool{Name: "t", InputSchema: map[string]any{"type": "string"}},
			wantErr: `its input schema has type string, not "object"`,
		},
		{
			name:    "schema that is not an object",
			tool:    &sdk.Tool{Name: "t", InputSchema: []any{1}},
			wantErr: "its input schema is not a JSON object",
		},
		{
			name:    "no schema",
			tool:    &sdk.Tool{Name: "t"},
			wantErr: "its input schema is not a JSON object",
		},
		{
			name:    "huge schema",
			tool:    &sdk.Tool{Name: "t", InputSchema: hugeSchema},
			wantErr: "more than the 65536 allowed",
		},
		{
			name:    "no name",
			tool:    &sdk.Tool{InputSchema: map[string]any{"type": "object"}},
			wantErr: "the tool has no name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, err := toolDef("n", tt.tool)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("toolDef() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if def.Name != "n" || def.Description != tt.wantDesc || string(def.Parameters) != tt.wantParams {
				t.Errorf("toolDef() = %+v (params %s), want description %q, params %s", def, def.Parameters, tt.wantDesc, tt.wantParams)
			}
		})
	}

	t.Run("long description is capped on a rune boundary", func(t *testing.T) {
		def, err := toolDef("n", &sdk.Tool{Name: "t", Description: longDesc, InputSchema: map[string]any{"type": "object"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(def.Description) > MaxDescription || !utf8.ValidString(def.Description) || !strings.HasSuffix(def.Description, "é…") {
			t.Errorf("description has %d bytes, valid UTF-8 %v, ends %q", len(def.Description), utf8.ValidString(def.Description), def.Description[len(def.Description)-8:])
		}
	})
}

func TestCheckArguments(t *testing.T) {
	tests := []struct {
		args    string
		want    string // the JSON sent, or "" when refused
		problem string // part of the message for the model
	}{
		{args: `{"text":"hi"}`, want: `{"text":"hi"}`},
		{args: "  {}\n", want: `{}`},
		{args: "", want: `{}`},
		{args: "[1,2]", problem: "they are a JSON array"},
		{args: `"s"`, problem: "they are a JSON string"},
		{args: "null", problem: "they are a JSON null"},
		{args: "3", problem: "they are a JSON number"},
		{args: "{", problem: "not valid JSON"},
		{args: "{}}", problem: "not valid JSON"},
		{args: `{"a":1} {"b":2}`, problem: "not valid JSON"},
		{args: `{"a":"` + strings.Repeat("x", MaxArguments) + `"}`, problem: "more than the 1048576 allowed"},
	}
	for _, tt := range tests {
		got, problem := checkArguments(tt.args)
		if tt.problem == "" {
			if problem != "" || string(got) != tt.want {
				t.Errorf("checkArguments(%.40q) = %s, %q; want %s", tt.args, got, problem, tt.want)
			}
			continue
		}
		if got != nil || !strings.Contains(problem, tt.problem) || !strings.HasPrefix(problem, "The arguments") {
			t.Errorf("checkArguments(%.40q) = %s, %q; want a message containing %q", tt.args, got, problem, tt.problem)
		}
	}
}

func TestResultText(t *testing.T) {
	size := int64(99)
	tests := []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{
			name: "text parts joined",
			res:  &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}},
			want: "a\nb",
		},
		{
			name: "other content described",
			res: &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
				&sdk.AudioContent{Data: make([]byte, 5)},
				&sdk.ResourceLink{URI: "file:///a", Name: "a", MIMEType: "text/plain", Size: &size},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", Blob: make([]byte, 7)}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///c", Text: "inner"}},
			}},
			want: "[image: image/png, 1234 bytes]\n[audio: unknown type, 5 bytes]\n[resource link: file:///a a (text/plain)]\n" +
				"[resource: file:///b, 7 bytes]\n[resource: file:///c]\ninner",
		},
		{
			name: "structured content when there is no content",
			res:  &sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}},
			want: `{"n":1}`,
		},
		{
			name: "invalid UTF-8 is replaced",
			res:  &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a\xffb"}}},
			want: "a\uFFFDb",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, resultText(tt.res)); diff != "" {
				t.Errorf("resultText (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeadTail(t *testing.T) {
	s := "BEGIN" + strings.Repeat("é", 1000) + "END"
	got := headTail(s, 200)
	if len(got) > 200 || !utf8.ValidString(got) || !strings.HasPrefix(got, "BEGINé") || !strings.HasSuffix(got, "éEND") ||
		!strings.Contains(got, "bytes omitted ...]") {
		t.Errorf("headTail() = %q (%d bytes)", got, len(got))
	}
	if got := headTail("short", 200); got != "short" {
		t.Errorf("headTail(short) = %q", got)
	}
}

func TestPrintable(t *testing.T) {
	got := printable("  \x1b[31mError:\tbad\r\x00 \xff ", 100)
	if want := "[31mError: bad   \uFFFD"; got != want {
		t.Errorf("printable() = %q, want %q", got, want)
	}
}

// The user's headers go to the server's origin only: not to another host
// a redirect or an SSE endpoint points at.
func TestHTTPTransport_HeadersOnlyToOrigin(t *testing.T) {
	got := make(chan string, 2)
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	})
	own := httptest.NewServer(record)
	defer own.Close()
	other := httptest.NewServer(record)
	defer other.Close()

	u, _ := url.Parse(own.URL + "/mcp")
	tr := newHTTPTransport(t.Context(), u, []KV{{"Authorization", "Bearer secret"}}, nil)
	client := &http.Client{Transport: tr}
	for _, target := range []string{own.URL + "/x", other.URL + "/x"} {
		resp, err := client.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if a, b := <-got, <-got; a != "Bearer secret" || b != "" {
		t.Errorf("Authorization at own origin %q, at other origin %q; want it at its own only", a, b)
	}
}

func TestBoundedBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		n := maxFrame
		if r.URL.Path == "/over" {
			n++
		}
		w.Write([]byte(strings.Repeat(" ", n)))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	client := &http.Client{Transport: newHTTPTransport(t.Context(), u, nil, nil)}
	for path, wantErr := range map[string]bool{"/exact": false, "/over": true} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if (err != nil) != wantErr {
			t.Errorf("%s: read error %v, want error %v", path, err, wantErr)
		}
	}
}

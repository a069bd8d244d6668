package config

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// editProviderBefore and lexerBefore are editProvider and lexer.line as
// they were before they were split into named steps, kept while the
// refactor is checked against them.
func editProviderBefore(data []byte, set map[string]string) ([]byte, error) {
	lines := splitLines(data)
	starts := statementStarts(lines)
	provider := -1 // the header's line
	done := map[string]bool{}
	table := ""
	for i, line := range lines {
		if !starts[i] {
			continue
		}
		if m := header.FindStringSubmatch(line); m != nil {
			table = normTable(m[2])
			if m[1] == "[[" {
				table = "[[" + table
			}
			if table == "provider" {
				provider = i
			}
			continue
		}
		if table == "" && rootProvider.MatchString(line) {
			return nil, fmt.Errorf("line %d sets provider outside a [provider] table", i+1)
		}
		if table != "provider" {
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key := m[2]
		if m[3] != "" || m[4] != "" {
			key = m[3] + m[4]
		}
		v, ok := set[key]
		if !ok || done[key] {
			continue
		}
		done[key] = true
		// Replace the statement, keeping its indentation and a trailing
		// comment of a one-line statement.
		last := i
		for last+1 < len(lines) && !starts[last+1] {
			last++
		}
		comment := ""
		if c := trailingComment(lines[i : last+1]); c != "" {
			comment = " " + c
		}
		lines[i] = m[1] + key + " = " + tomlString(v) + comment
		for j := i + 1; j <= last; j++ {
			lines[j] = "\x00" // removed below
		}
	}
	var add []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !done[k] {
			add = append(add, k+" = "+tomlString(set[k]))
		}
	}
	var out []string
	switch {
	case len(add) == 0:
		out = lines
	case provider >= 0:
		out = slices.Concat(lines[:provider+1], add, lines[provider+1:])
	default:
		out = lines
		if len(out) > 0 && strings.TrimSpace(out[len(out)-1]) != "" {
			out = append(out, "")
		}
		out = append(out, "[provider]")
		out = append(out, add...)
	}
	var b bytes.Buffer
	for _, l := range out {
		if l == "\x00" {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

type lexerBefore struct {
	inML  string
	depth int
}

func (lx *lexerBefore) line(line string, comment func(int)) {
	for j := 0; j < len(line); j++ {
		c := line[j]
		if lx.inML != "" {
			if c == '\\' && lx.inML == `"""` {
				j++
				continue
			}
			if strings.HasPrefix(line[j:], lx.inML) {
				j += 2
				for j+1 < len(line) && line[j+1] == lx.inML[0] { // """" ends with a quote in the string
					j++
				}
				lx.inML = ""
			}
			continue
		}
		switch {
		case c == '#':
			if comment != nil {
				comment(j)
			}
			return
		case strings.HasPrefix(line[j:], `"""`), strings.HasPrefix(line[j:], `'''`):
			lx.inML = line[j : j+3]
			j += 2
		case c == '"':
			for j++; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' {
					j++
				}
			}
		case c == '\'':
			for j++; j < len(line) && line[j] != '\''; j++ {
			}
		case c == '[' || c == '{':
			// A header's brackets open and close on its line.
			lx.depth++
		case c == ']' || c == '}':
			if lx.depth > 0 {
				lx.depth--
			}
		}
	}
}

// genTOML makes a TOML-like text from pieces a config file holds: headers
// of [provider] written every way, other tables, keys bare and quoted,
// one- and multi-line strings and arrays, inline tables, comments in and
// out of strings, escapes, root-level provider keys, CRLF, and broken
// pieces (unclosed strings and brackets).
func genTOML(r *rand.Rand) string {
	pieces := []string{
		"[provider]\n", "[ \"provider\" ] # t\n", "['provider']\n", "[[provider]]\n", "[provider.headers]\n", "[other]\n", "[a.'b']\n",
		"model = \"x\"\n", "\tmodel='m'#c\n", "\"model\" = 'y' # keep\n", "'base_url' = \"u\"\n", "api_key_env = \"K\" # a \"#\" here\n",
		"base_url = \"\"\"\nline # not a comment\n\"\"\"\n", "model = '''\nx'''\n", "model = \"\"\"a\\\"\"\"\"\" # c\n",
		"models = [\n\"[provider]\",\n]\n", "x = [1, [2,\n3]] # c\n", "t = { a = \"}\" }\n", "provider.model = \"x\"\n", "provider = { model = \"x\" }\n",
		"# a comment\n", "\n", "  \n", "k = \"unclosed\n", "k = [\n", "k = 'a\\'\n", "dir = 'C:\\' # c\n", "p = ['\\', \"]\"] # c\n", "model = 1\r\n", "name = \"esc \\\\\" # c\n", "\"\"\"", "'''", "]", "}",
	}
	var b strings.Builder
	for range r.IntN(10) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	s := b.String()
	if r.IntN(4) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// editProvider edits generated files as it did before its refactor.
func TestEditProvider_SameAsBefore(t *testing.T) {
	keys := []string{"model", "base_url", "api_key_env"}
	r := rand.New(rand.NewPCG(30, 6))
	for range 50000 {
		text := genTOML(r)
		set := map[string]string{}
		for _, k := range keys {
			if r.IntN(2) == 0 {
				set[k] = "v-" + k
			}
		}
		got, gerr := editProvider([]byte(text), set)
		want, werr := editProviderBefore([]byte(text), set)
		if !bytes.Equal(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("editProvider(%q, %v) = %q, %v; before %q, %v", text, slices.Sorted(maps.Keys(set)), got, gerr, want, werr)
		}
	}
}

// lexer.line reads generated lines as it did before its refactor: the
// same state after each line and the same comments found.
func TestLexer_SameAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 7))
	for range 50000 {
		var lx lexer
		var old lexerBefore
		for _, line := range strings.Split(genTOML(r), "\n") {
			var got, want []int
			lx.line(line, func(j int) { got = append(got, j) })
			old.line(line, func(j int) { want = append(want, j) })
			if !slices.Equal(got, want) || lx.inML != old.inML || lx.depth != old.depth {
				t.Fatalf("line(%q): comments %v, state %q %d; before %v, %q %d", line, got, lx.inML, lx.depth, want, old.inML, old.depth)
			}
		}
	}
}

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// SetProviderKeys sets keys of the [provider] table (base_url, model,
// api_key_env: string values) in the TOML file at path, by editing its
// text: every other line, comment and blank line stays as it was, and a
// key already there keeps its place and its trailing comment. A missing
// file is created (0600, in a 0700 directory). The edit is checked by
// decoding the result: it must set exactly these keys and change nothing
// else, or the file is left alone and the error shows the lines to add by
// hand (a file that sets provider.* as dotted keys or an inline table is
// such a case). The file is replaced atomically; a link to it is followed.
func SetProviderKeys(path string, set map[string]string) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	old, mode, err := readForEdit(path)
	if err != nil {
		return err
	}
	edited, err := editProvider(old, set)
	if err == nil {
		err = checkEdit(old, edited, set)
	}
	if err != nil {
		return fmt.Errorf("%s: cannot be edited safely (%v); add these lines under [provider] yourself:\n%s", path, err, keyLines(set))
	}
	return replaceFile(path, edited, mode)
}

func readForEdit(path string) ([]byte, fs.FileMode, error) {
	f, err := regfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	data, err := readConfigFile(path, false)
	return data, info.Mode().Perm(), err
}

// keyLines writes set as TOML lines, sorted.
func keyLines(set map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(set)) {
		fmt.Fprintf(&b, "%s = %s\n", k, tomlString(set[k]))
	}
	return b.String()
}

// tomlString quotes s as a TOML basic string: strconv.Quote's escapes
// are TOML's but for \x and \a (and \v), which a URL or model name never
// holds; checkEdit catches the rest.
func tomlString(s string) string { return strconv.Quote(s) }

var (
	// header is a table header, [a.b] or [[a.b]], with an optional comment.
	header = regexp.MustCompile(`^\s*(\[\[?)\s*([^\[\]#]*?)\s*\]\]?\s*(#.*)?$`)
	// keyLine is a line that sets a bare or quoted key.
	keyLine = regexp.MustCompile(`^(\s*)("([^"\\]*)"|'([^']*)'|[A-Za-z0-9_-]+)\s*=`)
	// rootProvider is a root-level line that defines the provider table
	// itself (provider.model = …, provider = { … }), after which TOML
	// allows no [provider] header.
	rootProvider = regexp.MustCompile(`^\s*("provider"|'provider'|provider)\s*[.=]`)
)

// editProvider returns data with set written into its [provider] table.
func editProvider(data []byte, set map[string]string) ([]byte, error) {
	lines := splitLines(data)
	e := providerEdit{lines: lines, starts: statementStarts(lines), set: set, done: map[string]bool{}}
	provider := -1 // the header's line
	table := ""
	for i, line := range lines {
		if !e.starts[i] {
			continue
		}
		if t, ok := tableHeader(line); ok {
			if table = t; table == "provider" {
				provider = i
			}
			continue
		}
		if table == "" && rootProvider.MatchString(line) {
			return nil, fmt.Errorf("line %d sets provider outside a [provider] table", i+1)
		}
		if table == "provider" {
			e.replace(i)
		}
	}
	return joinLines(e.withAdded(provider)), nil
}

// tableHeader reads a table header line: the table's name as normTable
// writes it, "[[" before an array of tables'.
func tableHeader(line string) (string, bool) {
	m := header.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	if m[1] == "[[" {
		return "[[" + normTable(m[2]), true
	}
	return normTable(m[2]), true
}

// providerEdit is editProvider's work on the lines of a file.
type providerEdit struct {
	lines  []string
	starts []bool // statementStarts of lines
	set    map[string]string
	done   map[string]bool // the keys of set already written
}

// removedLine marks a line the edit drops.
const removedLine = "\x00"

// replace rewrites the statement at line i of the [provider] table when it
// is the first to set a key of set: the new one keeps its indentation and
// the trailing comment of a one-line statement, and the lines the old
// value went on over are dropped.
func (e *providerEdit) replace(i int) {
	m := keyLine.FindStringSubmatch(e.lines[i])
	if m == nil {
		return
	}
	key := m[2]
	if m[3] != "" || m[4] != "" {
		key = m[3] + m[4]
	}
	v, ok := e.set[key]
	if !ok || e.done[key] {
		return
	}
	e.done[key] = true
	last := i
	for last+1 < len(e.lines) && !e.starts[last+1] {
		last++
	}
	comment := ""
	if c := trailingComment(e.lines[i : last+1]); c != "" {
		comment = " " + c
	}
	e.lines[i] = m[1] + key + " = " + tomlString(v) + comment
	for j := i + 1; j <= last; j++ {
		e.lines[j] = removedLine
	}
}

// withAdded is the lines with the keys of set not yet written added, sorted:
// after the [provider] header at line provider, or in a new [provider]
// table at the end when there is none (provider < 0).
func (e *providerEdit) withAdded(provider int) []string {
	var add []string
	for _, k := range slices.Sorted(maps.Keys(e.set)) {
		if !e.done[k] {
			add = append(add, k+" = "+tomlString(e.set[k]))
		}
	}
	out := e.lines
	switch {
	case len(add) == 0:
	case provider >= 0:
		out = slices.Concat(out[:provider+1], add, out[provider+1:])
	default:
		if len(out) > 0 && strings.TrimSpace(out[len(out)-1]) != "" {
			out = append(out, "")
		}
		out = append(out, "[provider]")
		out = append(out, add...)
	}
	return out
}

// joinLines writes lines each ending with \n, but for the removed ones.
func joinLines(lines []string) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		if l == removedLine {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// splitLines splits data into lines without their \n (a \r stays with
// its line); a last line without \n counts.
func splitLines(data []byte) []string {
	s := string(data)
	s = strings.TrimSuffix(s, "\n")
	if s == "" && len(data) == 0 {
		return nil
	}
	return strings.Split(s, "\n")
}

// normTable writes a table name as its keys joined by dots, without
// quotes or spaces around them, so [ provider ] and ["provider"] are
// [provider].
func normTable(name string) string {
	var keys []string
	for _, part := range strings.Split(name, ".") {
		part = strings.TrimSpace(part)
		if len(part) >= 2 && (part[0] == '"' && part[len(part)-1] == '"' || part[0] == '\'' && part[len(part)-1] == '\'') {
			part = part[1 : len(part)-1]
		}
		keys = append(keys, part)
	}
	return strings.Join(keys, ".")
}

// statementStarts marks the lines that begin a statement: not inside a
// multi-line string or a multi-line array or inline table.
func statementStarts(lines []string) []bool {
	starts := make([]bool, len(lines))
	var lx lexer
	for i, line := range lines {
		starts[i] = lx.top()
		lx.line(line, nil)
	}
	return starts
}

// trailingComment is the comment after the value of the statement made
// of lines: a # outside strings, arrays and tables on its last line; ""
// if none.
func trailingComment(lines []string) string {
	var lx lexer
	comment := ""
	for i, line := range lines {
		comment = ""
		lx.line(line, func(j int) {
			if i == len(lines)-1 && lx.depth == 0 {
				comment = line[j:]
			}
		})
	}
	return comment
}

// lexer follows TOML's strings, arrays and inline tables line by line,
// enough to tell where a statement ends and where a comment starts.
type lexer struct {
	inML  string // `"""` or `'''` inside a multi-line string
	depth int    // open [ and { of a value
}

func (lx *lexer) top() bool { return lx.inML == "" && lx.depth == 0 }

// line reads one line, calling comment with the index of a comment's #.
func (lx *lexer) line(line string, comment func(int)) {
	for j := 0; j < len(line); j++ {
		if lx.inML != "" {
			j = lx.inMultiline(line, j)
			continue
		}
		switch c := line[j]; {
		case c == '#':
			if comment != nil {
				comment(j)
			}
			return
		case strings.HasPrefix(line[j:], `"""`), strings.HasPrefix(line[j:], `'''`):
			lx.inML = line[j : j+3]
			j += 2
		case c == '"' || c == '\'':
			j = quotedEnd(line, j)
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

// inMultiline reads line[j] inside a multi-line string: it returns the
// index of the last byte read, the escaped byte after a backslash of a
// basic string or the last of the closing quotes (which may follow quotes
// that are in the string), and ends the string there.
func (lx *lexer) inMultiline(line string, j int) int {
	switch {
	case line[j] == '\\' && lx.inML == `"""`:
		return j + 1
	case !strings.HasPrefix(line[j:], lx.inML):
		return j
	}
	j += 2
	for j+1 < len(line) && line[j+1] == lx.inML[0] { // """" ends with a quote in the string
		j++
	}
	lx.inML = ""
	return j
}

// quotedEnd is the index of the quote that closes the one-line string
// opened at line[j] (a basic string, with escapes, or a literal one,
// without), or past the end of line when it is not closed there.
func quotedEnd(line string, j int) int {
	q := line[j]
	for j++; j < len(line) && line[j] != q; j++ {
		if q == '"' && line[j] == '\\' {
			j++
		}
	}
	return j
}

// checkEdit decodes both versions: the new one must hold set under
// provider and otherwise equal the old one.
func checkEdit(old, edited []byte, set map[string]string) error {
	var before, after map[string]any
	if _, err := toml.Decode(string(old), &before); err != nil {
		return fmt.Errorf("it does not parse: %w", err)
	}
	if _, err := toml.Decode(string(edited), &after); err != nil {
		return fmt.Errorf("the edit would not parse: %w", err)
	}
	p, _ := after["provider"].(map[string]any)
	for k, v := range set {
		if p[k] != v {
			return fmt.Errorf("provider.%s would not be %q", k, v)
		}
	}
	if before == nil {
		before = map[string]any{}
	}
	bp, _ := before["provider"].(map[string]any)
	if bp == nil {
		bp = map[string]any{}
	}
	bp = maps.Clone(bp)
	for k, v := range set {
		bp[k] = v
	}
	before = maps.Clone(before)
	before["provider"] = bp
	if !reflect.DeepEqual(before, after) {
		return errors.New("the edit would change other settings")
	}
	return nil
}

// replaceFile writes data to path atomically with mode.
func replaceFile(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

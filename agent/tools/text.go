package tools

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/internal/text"
)

// Read limits: what one read_file call hands the model at most.
const (
	// DefaultReadLines is how many lines read_file returns when the model
	// gives no limit.
	DefaultReadLines = 2000
	// MaxReadBytes caps the text of one read_file result, limit or not, so
	// that one call cannot flood the model's context.
	MaxReadBytes = 256 << 10
	// MaxLineBytes is where read_file cuts a single very long line
	// (minified code, data).
	MaxLineBytes = 4 << 10
)

// binarySniffLen is how much of a file IsBinary looks at, as git does.
const binarySniffLen = 8 << 10

// ApplyEdit replaces oldText with newText in content and returns the new
// content and how many occurrences were replaced. oldText must occur exactly
// once unless replaceAll is set; the errors tell the model how to fix its
// call.
func ApplyEdit(content, oldText, newText string, replaceAll bool) (string, int, error) {
	if oldText == "" {
		return "", 0, errors.New("old_text is empty; give the exact text to replace, or use write_file to write a whole file")
	}
	if oldText == newText {
		return "", 0, errors.New("old_text and new_text are the same, so the edit would change nothing")
	}
	n := strings.Count(content, oldText)
	switch {
	case n == 0:
		msg := "old_text was not found in the file; it must match exactly, including whitespace and indentation. Read the file again and copy the text from it"
		if strings.Contains(content, "\r\n") && !strings.Contains(oldText, "\r\n") &&
			strings.Contains(strings.ReplaceAll(content, "\r\n", "\n"), oldText) {
			msg += " (the file has Windows line endings, \\r\\n)"
		}
		return "", 0, errors.New(msg)
	case n > 1 && !replaceAll:
		return "", 0, fmt.Errorf("old_text matches %d places in the file; add surrounding lines to old_text so that it matches exactly one, or set replace_all to replace all %d", n, n)
	case replaceAll:
		return strings.ReplaceAll(content, oldText, newText), n, nil
	default:
		return strings.Replace(content, oldText, newText, 1), 1, nil
	}
}

// FormatRead returns the part of content that read_file hands the model:
// the lines [offset, offset+limit), 1-based, where offset 0 means 1 and
// limit 0 means DefaultReadLines. The result never exceeds MaxReadBytes (cut
// at a line boundary), lines longer than MaxLineBytes are cut with a marker,
// and when the text stops before the end of the file a note on the last line
// says how to read on. An offset past the end gives a note, not an error.
func FormatRead(content string, offset, limit int) string {
	if content == "" {
		return "[the file is empty]"
	}
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // content ends with a newline
	}
	total := len(lines)
	if offset <= 0 {
		offset = 1
	}
	if offset > total {
		return fmt.Sprintf("[the file has %d lines; offset %d is past the end]", total, offset)
	}
	want := limit
	if want <= 0 {
		want = DefaultReadLines
	}
	end := min(total, offset-1+want) // index after the last line to show

	var b strings.Builder
	i := offset - 1
	for ; i < end; i++ {
		line := cutLine(lines[i])
		if b.Len() > 0 && b.Len()+len(line) > MaxReadBytes {
			break
		}
		b.WriteString(line)
	}
	last := i // 1-based number of the last line shown
	if last < total {
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[showing lines %d–%d of %d; call read_file with offset %d to read on]", offset, last, total, last+1)
	}
	return b.String()
}

// cutLine shortens a line longer than MaxLineBytes, at a rune boundary, and
// says how long it was. The newline, if any, is kept.
func cutLine(line string) string {
	body, nl := strings.CutSuffix(line, "\n")
	if len(body) <= MaxLineBytes {
		return line
	}
	s := fmt.Sprintf("%s … [line cut: %d bytes in all]", text.Prefix(body, MaxLineBytes), len(body))
	if nl {
		s += "\n"
	}
	return s
}

// IsBinary reports whether b looks like binary data rather than text: a NUL
// byte or invalid UTF-8 in its first 8 KiB. A multi-byte character cut by the
// 8 KiB boundary does not count as invalid.
func IsBinary(b []byte) bool {
	head := b
	if len(head) > binarySniffLen {
		head = head[:binarySniffLen]
	}
	for i := 0; i < len(head); {
		if head[i] == 0 {
			return true
		}
		if head[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && size == 1 {
			// Only a character split by our own cut is forgiven.
			cutShort := len(head) < len(b) && !utf8.FullRune(head[i:])
			return !cutShort
		}
		i += size
	}
	return false
}

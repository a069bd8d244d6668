package llm

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// The messages go into go-openai's body only where its shape is the one
// checked: the model first, then an empty message list. Any other shape (a
// go-openai upgrade that reorders the fields) fails the request rather
// than send a body nobody checked.
func TestSpliceBody_OnlyIntoTheShapeChecked(t *testing.T) {
	w := func() *wireMessages {
		return &wireMessages{model: `m "<x>"`, parts: [][]byte{nil, []byte(`{"role":"user","content":"a"},`), []byte(`{"role":"user","content":"b"}`), nil}}
	}
	const head = `{"model":"m \"\u003cx\u003e\"","messages":[`
	parts, n, err := w().spliceBody([]byte(head + `],"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(&partsReader{parts: parts})
	want := head + `{"role":"user","content":"a"},{"role":"user","content":"b"}],"stream":true}`
	if string(got) != want || n != int64(len(want)) {
		t.Errorf("spliced body %s (%d bytes), want %s", got, n, want)
	}
	for _, body := range []string{
		`{"messages":[],"model":"m \"\u003cx\u003e\""}`,
		`{"model":"m \"<x>\"","messages":[],"stream":true}`,
		head + `{"role":"user"}],"stream":true}`,
		head,
		`{"model":"other","messages":[]}`,
	} {
		if _, _, err := w().spliceBody([]byte(body)); err == nil || !strings.Contains(err.Error(), "does not start with") {
			t.Errorf("spliceBody(%s) = %v, want it refused", body, err)
		}
	}
}

// A body read in parts is the parts in order, by Read of any size and by
// WriteTo, again and again (GetBody).
func TestPartsReader(t *testing.T) {
	parts := [][]byte{[]byte("ab"), nil, []byte("c"), []byte(""), []byte("defg")}
	for size := 1; size <= 8; size++ {
		r := &partsReader{parts: parts}
		var got bytes.Buffer
		buf := make([]byte, size)
		for {
			n, err := r.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil || n == 0 {
				t.Fatalf("Read = %d, %v", n, err)
			}
		}
		if got.String() != "abcdefg" {
			t.Errorf("read %d at a time: %q", size, got.String())
		}
	}
	var w bytes.Buffer
	if n, err := (&partsReader{parts: parts}).WriteTo(&w); err != nil || n != 7 || w.String() != "abcdefg" {
		t.Errorf("WriteTo = %d, %v, %q", n, err, w.String())
	}
	if string(parts[0]) != "ab" || string(parts[4]) != "defg" {
		t.Errorf("reading changed the parts: %q", parts)
	}
}

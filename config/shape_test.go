package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestCheckValue_EveryField walks every field of Config, as the file may
// set it, and gives checkValue a value of the TOML type the field takes and
// one of a type it does not: the first passes, the second is one problem
// named by the field's key, and no field's type is one checkShape does not
// know (a panic the user's file would find first).
func TestCheckValue_EveryField(t *testing.T) {
	n := 0
	var walk func(t reflect.Type, prefix toml.Key)
	walk = func(st reflect.Type, prefix toml.Key) {
		for f := range st.Fields() {
			name := tomlName(f)
			if name == "" {
				continue
			}
			n++
			key := keyString(append(slices.Clip(prefix), name))
			right, wrong := fieldValues(f.Type)
			if errs := checkValue("c.toml", f.Type, right, prefix, name); len(errs) != 0 {
				t.Errorf("%s = %#v: %v, want no problem", key, right, errs)
			}
			errs := checkValue("c.toml", f.Type, wrong, prefix, name)
			var fe *FieldError
			if len(errs) != 1 || !errors.As(errs[0], &fe) || fe.Key != key || fe.Source != "c.toml" {
				t.Errorf("%s = %#v: %v, want one problem of %s", key, wrong, errs, key)
			}
			switch {
			case f.Type.Kind() == reflect.Struct && !takesText(f.Type):
				walk(f.Type, append(slices.Clip(prefix), name))
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				walk(f.Type.Elem(), append(slices.Clip(prefix), name+"[0]"))
			}
		}
	}
	walk(reflect.TypeFor[Config](), nil)
	if n < 10 {
		t.Fatalf("walked %d fields of Config: the walk found no tags", n)
	}
}

func tomlName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if tag == "-" {
		return ""
	}
	return tag
}

func takesText(t reflect.Type) bool { return reflect.PointerTo(t).Implements(textUnmarshaler) }

// fieldValues is a value the decoder gives for a field of type t that
// accepts it (its content aside) and one that it does not.
func fieldValues(t reflect.Type) (right, wrong any) {
	table := map[string]any{}
	switch {
	case takesText(t), t.Kind() == reflect.String:
		return "x", int64(1)
	case t.Kind() == reflect.Int:
		return int64(1), "1"
	case t.Kind() == reflect.Float64:
		return int64(1), true
	case t.Kind() == reflect.Bool:
		return true, "true"
	case t.Kind() == reflect.Struct:
		return table, "x"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return []map[string]any{table}, table
	case t.Kind() == reflect.Map:
		return map[string]any{"k": "v"}, int64(1)
	case t.Kind() == reflect.Slice:
		return []any{"a"}, []any{"a", int64(1)}
	}
	return nil, nil
}

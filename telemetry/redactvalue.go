package telemetry

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cloudinfer/cloudinfer/hooks"
)

// maxWalkDepth bounds how deep redactComposite walks a value that
// encoding/json cannot encode (pointer cycles included).
const maxWalkDepth = 8

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	errPanicked       = errors.New("telemetry: a method of the value panicked")
)

// redactComposite writes a struct, map, slice or pointer as JSON with its
// credentials hidden (see RedactAttr): encoded by encoding/json when it
// can, then redacted as a tree (redactJSON), else walked with reflect
// (jsonWriter.walk). A value that may hold a []byte (mayHoldBytes) is
// walked too: encoding/json writes bytes as base64, which redaction could
// not read. A value whose MarshalJSON or MarshalText panics is written
// "<TYPE: unprintable>".
func redactComposite(x any) string {
	if mayHoldBytes(reflect.TypeOf(x)) {
		var w jsonWriter
		w.walk(reflect.ValueOf(x), 0)
		return w.buf.String()
	}
	b, err := marshalJSON(x)
	if err == nil {
		var w jsonWriter
		if err := w.redactJSON(b); err == nil {
			return w.buf.String()
		}
		return unprintable(x)
	}
	if errors.Is(err, errPanicked) {
		return unprintable(x)
	}
	var w jsonWriter
	w.walk(reflect.ValueOf(x), 0)
	return w.buf.String()
}

// marshalJSON encodes x as json.Marshal does, but without escaping HTML
// characters ('&', '<', '>') and without a trailing newline; a panic in a
// method of x is reported as errPanicked.
func marshalJSON(x any) (b []byte, err error) {
	defer func() {
		if recover() != nil {
			b, err = nil, errPanicked
		}
	}()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// holdsBytes caches mayHoldBytes by type.
var holdsBytes sync.Map // reflect.Type → bool

// mayHoldBytes reports whether encoding/json could reach a byte slice
// through a value of type t, which it would write as base64: t is one, or
// holds one (or an interface, which may) in a field, element, map value or
// pointer, without a JSON or text marshaler of its own on the way.
func mayHoldBytes(t reflect.Type) bool {
	if t == nil {
		return false
	}
	if v, ok := holdsBytes.Load(t); ok {
		return v.(bool)
	}
	v := typeMayHoldBytes(t, map[reflect.Type]bool{})
	holdsBytes.Store(t, v)
	return v
}

func typeMayHoldBytes(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a cycle adds nothing new
	}
	seen[t] = true
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) {
		// Written as its method says, which redactJSON then sees. A method
		// on the pointer is not counted: encoding/json skips it for a value
		// it cannot address.
		return false
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8 || typeMayHoldBytes(t.Elem(), seen)
	case reflect.Array, reflect.Pointer:
		return typeMayHoldBytes(t.Elem(), seen)
	case reflect.Map:
		return typeMayHoldBytes(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && typeMayHoldBytes(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// jsonWriter writes redacted JSON.
type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// str writes s as a JSON string, HTML characters unescaped.
func (w *jsonWriter) str(s string) {
	if w.enc == nil {
		w.enc = json.NewEncoder(&w.buf)
		w.enc.SetEscapeHTML(false)
	}
	_ = w.enc.Encode(s) // a string always encodes
	w.buf.Truncate(w.buf.Len() - 1)
}

// redactJSON writes the JSON document b with the value of every member
// whose name is a credential's (SensitiveKey) replaced by hooks.Redacted,
// and every string (member names included) redacted as free text. Members
// keep their order; numbers are written as they were.
func (w *jsonWriter) redactJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := w.jsonValue(dec); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("telemetry: trailing data after JSON value")
	}
	return nil
}

func (w *jsonWriter) jsonValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			w.buf.WriteByte('{')
			for i := 0; dec.More(); i++ {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if i > 0 {
					w.buf.WriteByte(',')
				}
				w.str(redactString(k))
				w.buf.WriteByte(':')
				if SensitiveKey(k) {
					w.str(hooks.Redacted)
					err = skipJSON(dec)
				} else {
					err = w.jsonValue(dec)
				}
				if err != nil {
					return err
				}
			}
			w.buf.WriteByte('}')
		case '[':
			w.buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					w.buf.WriteByte(',')
				}
				if err := w.jsonValue(dec); err != nil {
					return err
				}
			}
			w.buf.WriteByte(']')
		default:
			return fmt.Errorf("telemetry: unexpected %v in JSON", t)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
	case string:
		w.str(redactString(t))
	case json.Number:
		w.buf.WriteString(t.String())
	case bool:
		w.buf.WriteString(strconv.FormatBool(t))
	case nil:
		w.buf.WriteString("null")
	}
	return nil
}

// skipJSON reads past one JSON value.
func skipJSON(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// walk writes v as JSON, as encoding/json would but for what it cannot
// encode, with credentials hidden as redactJSON hides them: exported
// struct fields in order (named by their json tag where they have one),
// map entries sorted by key, elements; strings redacted as free text; a
// non-finite float as a string ("NaN"); a func, a channel, an unsafe
// pointer and anything deeper than maxWalkDepth as its type ("<chan
// int>"). A value with a MarshalJSON or MarshalText method is encoded with
// it, and written "<TYPE: unprintable>" if that fails.
func (w *jsonWriter) walk(v reflect.Value, depth int) {
	if !v.IsValid() {
		w.buf.WriteString("null")
		return
	}
	t := v.Type()
	if depth > maxWalkDepth {
		w.str("<" + t.String() + ">")
		return
	}
	if (v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface || !v.IsNil()) && v.CanInterface() &&
		(t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)) {
		x := v.Interface()
		var sub jsonWriter
		if b, err := marshalJSON(x); err == nil && sub.redactJSON(b) == nil {
			w.buf.Write(sub.buf.Bytes())
		} else {
			w.str(unprintable(x))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			w.buf.WriteString("null")
			return
		}
		w.walk(v.Elem(), depth+1)
	case reflect.Struct:
		w.buf.WriteByte('{')
		n := 0
		for i := range t.NumField() {
			f := t.Field(i)
			name := fieldName(f)
			if name == "" {
				continue
			}
			if n > 0 {
				w.buf.WriteByte(',')
			}
			n++
			w.str(name)
			w.buf.WriteByte(':')
			if SensitiveKey(name) {
				w.str(hooks.Redacted)
			} else {
				w.walk(v.Field(i), depth+1)
			}
		}
		w.buf.WriteByte('}')
	case reflect.Map:
		if v.IsNil() {
			w.buf.WriteString("null")
			return
		}
		type entry struct {
			k string
			v reflect.Value
		}
		es := make([]entry, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			es = append(es, entry{mapKeyText(it.Key(), depth+1), it.Value()})
		}
		slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.k, b.k) })
		w.buf.WriteByte('{')
		for i, e := range es {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.str(redactString(e.k))
			w.buf.WriteByte(':')
			if SensitiveKey(e.k) {
				w.str(hooks.Redacted)
			} else {
				w.walk(e.v, depth+1)
			}
		}
		w.buf.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			w.buf.WriteString("null")
			return
		}
		if t.Elem().Kind() == reflect.Uint8 && v.Kind() == reflect.Slice {
			w.str(redactString(string(v.Bytes()))) // as text, not base64: redaction must see it
			return
		}
		w.buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.walk(v.Index(i), depth+1)
		}
		w.buf.WriteByte(']')
	case reflect.String:
		w.str(redactString(v.String()))
	case reflect.Bool:
		w.buf.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		s := strconv.FormatFloat(f, 'g', -1, t.Bits())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			w.str(s)
		} else {
			w.buf.WriteString(s)
		}
	case reflect.Complex64, reflect.Complex128:
		w.str(strconv.FormatComplex(v.Complex(), 'g', -1, t.Bits()))
	default: // func, chan, unsafe pointer
		w.str("<" + t.String() + ">")
	}
}

// fieldName is the name a struct field is written under: its json tag's,
// else its own; "" for an unexported field or one tagged "-".
func fieldName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return f.Name
	}
	return name
}

// mapKeyText is the text of a map key: a string or a number as it is, any
// other key as walk writes it.
func mapKeyText(k reflect.Value, depth int) string {
	switch k.Kind() {
	case reflect.String:
		return k.String()
	case reflect.Bool:
		return strconv.FormatBool(k.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(k.Float(), 'g', -1, k.Type().Bits())
	}
	var w jsonWriter
	w.walk(k, depth)
	return w.buf.String()
}

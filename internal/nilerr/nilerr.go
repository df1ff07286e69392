// Package nilerr tells a typed nil error from a real one.
//
// A function that declares a concrete error type and returns it through
// the error interface ("var e *MyError; return e") hands its caller a
// non-nil error holding a nil pointer: the caller's err != nil holds, and
// calling err.Error() may panic. cloudinfer reads such a value from an
// adapter, hook or stream as "no error", which is what its author meant.
package nilerr

import "reflect"

// Is reports whether err is nil, or a nil pointer, map, slice, channel or
// function in a non-nil error interface.
func Is(err error) bool { return Value(err) }

// Value is Is for any interface value: a provider or handler held as an
// interface whose dynamic value is a nil pointer (or map, slice, channel,
// function) would panic when called, as a typed nil error does.
func Value(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

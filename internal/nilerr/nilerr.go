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
func Is(err error) bool {
	if err == nil {
		return true
	}
	switch v := reflect.ValueOf(err); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}

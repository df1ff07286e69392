package nilerr

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

type ptrErr struct{ msg string }

func (e *ptrErr) Error() string { return e.msg }

type mapErr map[string]string

func (mapErr) Error() string { return "map" }

type valErr struct{}

func (valErr) Error() string { return "value" }

func TestIs(t *testing.T) {
	var nilPtr *ptrErr
	var nilMap mapErr
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, true},
		{"typed nil pointer", nilPtr, true},
		{"typed nil map", nilMap, true},
		{"pointer", &ptrErr{"x"}, false},
		{"value", valErr{}, false},
		{"errors.New", errors.New("x"), false},
		{"empty map", mapErr{}, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Is(tt.err), tt.name)
	}
}

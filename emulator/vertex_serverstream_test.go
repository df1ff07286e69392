package emulator

import (
	"testing"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/stretchr/testify/assert"
)

// TestTensorValue: a Tensor becomes the JSON value it stands for: structs
// objects, lists arrays, one scalar of a typed list the scalar, several an
// array, an empty tensor nil.
func TestTensorValue(t *testing.T) {
	in := &aiplatformpb.Tensor{StructVal: map[string]*aiplatformpb.Tensor{
		"prompt":      {StringVal: []string{"hello"}},
		"max_tokens":  {Int64Val: []int64{8}},
		"stream":      {BoolVal: []bool{true}},
		"temperature": {DoubleVal: []float64{0.5}},
		"ids":         {IntVal: []int32{1, 2, 3}},
		"weights":     {FloatVal: []float32{0.25}},
		"counts":      {UintVal: []uint32{4}, Uint64Val: []uint64{5}},
		"turns":       {ListVal: []*aiplatformpb.Tensor{{StringVal: []string{"a"}}, {StringVal: []string{"b"}}}},
		"none":        {},
	}}
	assert.Equal(t, map[string]any{
		"prompt":      "hello",
		"max_tokens":  int64(8),
		"stream":      true,
		"temperature": 0.5,
		"ids":         []any{int32(1), int32(2), int32(3)},
		"weights":     float32(0.25),
		"counts":      []any{uint32(4), uint64(5)},
		"turns":       []any{"a", "b"},
		"none":        nil,
	}, tensorValue(in))
	assert.Nil(t, tensorValue(nil))
}

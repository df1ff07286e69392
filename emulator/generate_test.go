package emulator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExampleOfValidates: the answer made for a schema validates
// against it.
func TestExampleOfValidates(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"city":{"type":"string","minLength":12},"days":{"type":"integer","minimum":3,"maximum":7}},"required":["city","days"]}`,
		`{"type":"object","properties":{"unit":{"enum":["c","f"]},"tags":{"type":"array","items":{"type":"string"},"minItems":2},"ok":{"type":"boolean"},"x":{"type":["number","null"],"exclusiveMinimum":5}}}`,
		`{"type":"object","properties":{"nested":{"type":"object","properties":{"v":{"const":42}},"required":["v"]},"any":{"anyOf":[{"type":"integer"},{"type":"string"}]}},"required":["nested"],"additionalProperties":false}`,
		`{"type":"array","items":{"type":"number","maximum":0.5}}`,
		`{"type":"string","maxLength":3}`,
	} {
		doc := exampleOf(json.RawMessage(schema), "some drawn words", 0)
		sch, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
		require.NoError(t, err)
		c := jsonschema.NewCompiler()
		require.NoError(t, c.AddResource("s.json", sch))
		compiled, err := c.Compile("s.json")
		require.NoError(t, err)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(doc)))
		require.NoError(t, err, "%s", doc)
		assert.NoError(t, compiled.Validate(v), "%s for %s", doc, schema)
	}
	assert.JSONEq(t, `{"text":"w"}`, string(exampleOf(nil, "w", 0)), "JSON mode")
}

func TestSplitKeepsText(t *testing.T) {
	for _, n := range []int{1, 2, 5, 100} {
		s := `{"a":"é☃x","b":[1,2]}`
		parts := split(s, n)
		assert.Equal(t, s, strings.Join(parts, ""))
		assert.LessOrEqual(t, len(parts), max(n, 1))
		for _, p := range parts {
			assert.NotEmpty(t, p)
			assert.True(t, utf8Start(p[0]), "pieces start on a rune")
		}
	}
}

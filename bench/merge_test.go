package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergeRefusesARunAlreadyMerged: a result merged from runs A and B
// already holds A's requests; merging it with A again would count them
// twice, and so would merging two merged results that share a run.
func TestMergeRefusesARunAlreadyMerged(t *testing.T) {
	a, b := synthetic(t, "m1", 100, 0, 50, 2), synthetic(t, "m1", 100, 50, 100, 3)
	b.Hosts = []Host{{Name: "second-machine", CPUs: 2}}
	c := synthetic(t, "m1", 100, 100, 150, 0)
	c.Hosts = []Host{{Name: "third-machine", CPUs: 2}}
	ab, err := Merge(a, b)
	require.NoError(t, err)
	ac, err := Merge(a, c)
	require.NoError(t, err)

	for name, in := range map[string][]*Result{
		"merged then one of its runs": {ab, a},
		"one of its runs then merged": {b, ab},
		"two merged sharing a run":    {ab, ac},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Merge(in...)
			assert.ErrorContains(t, err, "twice")
		})
	}

	// A merged result with a further machine's run is fine.
	abc, err := Merge(ab, c)
	require.NoError(t, err)
	assert.Equal(t, int64(150+5), abc.Targets[0].Counts().Requests)
	assert.Equal(t, 3, abc.Targets[0].Machines)
}

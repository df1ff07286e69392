package sagemaker

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestEnableExplanationsAndPrefixAwareID: the two InvokeEndpoint inputs
// are sent as SageMaker's headers; a stream carries the prefix-aware id
// and refuses explanations, which its API has not.
func TestEnableExplanationsAndPrefixAwareID(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	ad, _ := testAdapter(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		if r.URL.Path == "/endpoints/ep/invocations-response-stream" {
			writeStreamHead(w, nil)
			_, _ = w.Write(encodeFrames(t, part(`{"generated_text":"hi"}`)))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"generated_text":"hi"}]`))
	}))
	call := invokeCall("ep", `{"inputs":"x"}`)
	call.Request.Attributes.EnableExplanations = "`true`"
	call.Request.Attributes.PrefixAwareID = "app-1"
	_, err := ad.Invoke(context.Background(), call)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "`true`", got[0].Get("X-Amzn-SageMaker-Enable-Explanations"))
	assert.Equal(t, "app-1", got[0].Get("X-Amzn-SageMaker-Prefix-Aware-Id"))

	_, err = ad.Stream(context.Background(), call)
	assert.Equal(t, errcodes.InvalidParam, errcodes.Of(err))
	assert.ErrorContains(t, err, "EnableExplanations")

	call.Request.Attributes.EnableExplanations = ""
	cs, err := ad.Stream(context.Background(), call)
	require.NoError(t, err)
	_, _ = drain(cs)
	require.Len(t, got, 2)
	assert.Equal(t, "app-1", got[1].Get("X-Amzn-SageMaker-Prefix-Aware-Id"))
	assert.Empty(t, got[1].Get("X-Amzn-SageMaker-Enable-Explanations"))
}

package vertex

import (
	"context"
	"testing"

	"cloud.google.com/go/aiplatform/apiv1/aiplatformpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestClientClose: closing a cloudreq client over Vertex closes the gRPC
// connection once (a second Close is no gRPC error), ends a stream in
// flight with ERR_CANCELED (as the cloudreq.Client.Close doc says), and a
// later call fails with ERR_INVALID_PARAM, not with an ERR_CANCELED that
// would read as the caller's cancel.
func TestClientClose(t *testing.T) {
	f, addr := startFake(t)
	f.set(func(f *fakeServer) {
		f.genChunks = []*aiplatformpb.GenerateContentResponse{genMsg("Hel", 0, 0, 0)}
		f.hold = true
	})
	c, _ := newFakeClient(t, addr)
	s, err := c.Stream(context.Background(), genReq())
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.Next())

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "a second Close is a no-op")
	for i := 0; s.Next(); i++ {
		require.Less(t, i, 10)
	}
	assert.ErrorIs(t, s.Err(), errcodes.Canceled, "the stream in flight ends: %v", s.Err())

	calls := len(f.Calls())
	_, err = c.Invoke(context.Background(), genReq())
	assert.ErrorIs(t, err, errcodes.InvalidParam)
	assert.Contains(t, err.Error(), "the client is closed")
	assert.Len(t, f.Calls(), calls)
}

package vertex

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// withoutADC empties the environment Application Default Credentials read
// (the credentials file variable, the gcloud configuration under HOME) and
// points the metadata server at a loopback one that has no service account,
// as on a VM without one: credential lookup then finds nothing and never
// leaves the machine (GCE_METADATA_HOST also stops the on-GCE probe, which
// would otherwise try 169.254.169.254 and DNS).
func withoutADC(t *testing.T) {
	t.Helper()
	md := httptest.NewServer(http.HandlerFunc(http.NotFound))
	t.Cleanup(md.Close)
	home := t.TempDir()
	for k, v := range map[string]string{
		"GOOGLE_APPLICATION_CREDENTIALS": "",
		"GOOGLE_API_KEY":                 "",
		"HOME":                           home,
		"CLOUDSDK_CONFIG":                filepath.Join(home, "gcloud"),
		"APPDATA":                        home,
		"GCE_METADATA_HOST":              strings.TrimPrefix(md.URL, "http://"),
	} {
		t.Setenv(k, v)
	}
}

// noCredentialsAdapter builds the adapter as a caller with no credentials
// anywhere would, against the emulator's plain-text gRPC listener, with
// authentication on (Options.Insecure would turn it off).
func noCredentialsAdapter(t *testing.T, srv *emulator.Server) (cloudreq.Adapter, error) {
	withoutADC(t)
	ad, err := New(context.Background(), Options{Project: "p", Location: "us-central1", Endpoint: srv.GRPCAddr(),
		ClientOptions: []option.ClientOption{option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}})
	if err != nil {
		return nil, err
	}
	return ad, nil
}

// TestNewCredentialsErrors: credentials New cannot find or read are
// ERR_UNAUTHENTICATED, not retryable, whatever ADC tripped on; a file that
// is not there (GOOGLE_APPLICATION_CREDENTIALS names it) is checked before
// any metadata-server lookup, so this never leaves the machine.
func TestNewCredentialsErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{not json"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alien.json"), []byte(`{"type":"alien"}`), 0o600))
	withoutADC(t)
	for _, name := range []string{"missing.json", "bad.json", "alien.json"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(dir, name))
			_, err := New(context.Background(), Options{Project: "p", Location: "us-central1"})
			require.ErrorIs(t, err, errcodes.Unauthenticated)
			e := errcodes.From(err)
			assert.False(t, e.Retryable)
			assert.Equal(t, cloudreq.ProviderGCP, e.Provider)
		})
	}
}

// TestNewErrorClass: ADC's "could not find default credentials" (no
// credentials anywhere, off Google Cloud) and the auth library's other
// credential errors are ERR_UNAUTHENTICATED; option mistakes stay
// ERR_INVALID_PARAM.
func TestNewErrorClass(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want errcodes.Code
	}{
		{errors.New("credentials: could not find default credentials. See https://cloud.google.com/docs/authentication/external/set-up-adc for more information"), errcodes.Unauthenticated},
		{fmt.Errorf("dialing: %w", errors.New("credentials: could not find default credentials. See …")), errcodes.Unauthenticated},
		{errors.New(`credentials: unsupported filetype "alien"`), errcodes.Unauthenticated},
		{fmt.Errorf("open /x/adc.json: %w", os.ErrNotExist), errcodes.Unauthenticated},
		{errors.New("options.WithoutAuthentication is incompatible with any option that provides credentials"), errcodes.InvalidParam},
		{errors.New("multiple credential options provided"), errcodes.InvalidParam},
	} {
		e := newClientError(tt.err)
		assert.Equal(t, tt.want, e.Code, "%v", tt.err)
		assert.False(t, e.Retryable)
		assert.Equal(t, cloudreq.ProviderGCP, e.Provider)
		assert.ErrorIs(t, e, tt.err, "the cause stays reachable")
	}
}

// TestNoCredentialsCall: with no credentials anywhere on a machine whose
// metadata server has no service account, the call fails at once with
// ERR_UNAUTHENTICATED, not retried.
func TestNoCredentialsCall(t *testing.T) {
	srv, err := emulator.New(emulator.Options{TimeScale: 0.01, Seed: 3})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	ad, err := noCredentialsAdapter(t, srv)
	if err == nil {
		c, cerr := cloudreq.New(cloudreq.Options{Adapters: []cloudreq.Adapter{ad}})
		require.NoError(t, cerr)
		defer c.Close()
		_, err = c.Invoke(context.Background(), emuGenerate("llama-3-8b"))
		assert.Empty(t, srv.Records(), "no request reached the server")
	}
	require.ErrorIs(t, err, errcodes.Unauthenticated)
	assert.False(t, errcodes.From(err).Retryable)
}

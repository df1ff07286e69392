package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// s3Client is the S3 SDK's client, unchanged apart from its endpoint (the
// emulator's /s3 root, path-style).
func s3Client(s *Server) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.URL() + "/s3"),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer:      aws.NopRetryer{},
	})
}

// getObject reads an object with the S3 SDK, waiting up to 5 s for it.
func getObject(ctx context.Context, t *testing.T, c *s3.Client, uri string) []byte {
	t.Helper()
	bucket, key, ok := splitS3URI(uri)
	require.True(t, ok, uri)
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err == nil {
			defer func() { _ = out.Body.Close() }()
			b, err := io.ReadAll(out.Body)
			require.NoError(t, err)
			return b
		}
		var nsk *s3types.NoSuchKey
		require.True(t, errors.As(err, &nsk), "%T %v", err, err)
		require.True(t, time.Now().Before(deadline), "no object at %s after 5 s", uri)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSageMakerAsyncRuns: an accepted inference runs as an InvokeEndpoint
// of its endpoint and its answer is written to the output location, read
// back with the S3 SDK; an input put with the S3 SDK is read from its
// location; a faulted run writes the error to the failure location.
func TestSageMakerAsyncRuns(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sm := sageMakerClient(s, "AKID", "secret")
	st := s3Client(s)

	out, err := sm.InvokeEndpointAsync(ctx, &sagemakerruntime.InvokeEndpointAsyncInput{EndpointName: aws.String("llama-3-8b"),
		Body: []byte(tgiSample), ContentType: aws.String("application/json"), InferenceId: aws.String("inline-1")})
	require.NoError(t, err)
	var gen []struct {
		GeneratedText string `json:"generated_text"`
	}
	require.NoError(t, json.Unmarshal(getObject(ctx, t, st, aws.ToString(out.OutputLocation)), &gen))
	require.Len(t, gen, 1)
	assert.NotEmpty(t, gen[0].GeneratedText)
	rec, ok := s.Record(lastRecordID(t, s))
	require.True(t, ok)
	assert.Equal(t, "llama-3-8b", rec.Endpoint)
	assert.Equal(t, http.StatusOK, rec.Status)

	_, err = st.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("my-bucket"), Key: aws.String("in/req.json"),
		Body: strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`), ContentType: aws.String("application/json")})
	require.NoError(t, err)
	out, err = sm.InvokeEndpointAsync(ctx, &sagemakerruntime.InvokeEndpointAsyncInput{EndpointName: aws.String("llama-3-8b"),
		InputLocation: aws.String("s3://my-bucket/in/req.json"), Filename: aws.String("answer.json"), S3OutputPathExtension: aws.String("batch-7")})
	require.NoError(t, err)
	assert.Equal(t, "s3://cloudinfer-emulator/async-output/llama-3-8b/batch-7/answer.json", aws.ToString(out.OutputLocation))
	var chat struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(getObject(ctx, t, st, aws.ToString(out.OutputLocation)), &chat))
	require.Len(t, chat.Choices, 1)
	assert.NotEmpty(t, chat.Choices[0].Message.Content)

	out, err = sm.InvokeEndpointAsync(ctx, &sagemakerruntime.InvokeEndpointAsyncInput{EndpointName: aws.String("llama-3-8b"),
		Body: []byte(tgiSample)}, inject(FaultModelError))
	require.NoError(t, err, "a fault is the run's, not the submission's")
	failure := string(getObject(ctx, t, st, aws.ToString(out.FailureLocation)))
	assert.Contains(t, failure, `"OriginalStatusCode":500`)
	_, found := s.S3Object(splitS3URIOrFail(t, aws.ToString(out.OutputLocation)))
	assert.False(t, found, "a failed run writes no output")
}

func splitS3URIOrFail(t *testing.T, uri string) (string, string) {
	b, k, ok := splitS3URI(uri)
	require.True(t, ok, uri)
	return b, k
}

// lastRecordID is the id of the newest record.
func lastRecordID(t *testing.T, s *Server) string {
	recs := s.Records()
	require.NotEmpty(t, recs)
	return recs[len(recs)-1].ID
}

// TestEmulatorS3: the S3 routes' own behaviour, through the SDK: put, head,
// get, delete, NoSuchKey.
func TestEmulatorS3(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := s3Client(s)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("dir/k.txt"), Body: strings.NewReader("hello"), ContentType: aws.String("text/plain")})
	require.NoError(t, err)
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("dir/k.txt")})
	require.NoError(t, err)
	assert.Equal(t, int64(5), aws.ToInt64(h.ContentLength))
	assert.Equal(t, "text/plain", aws.ToString(h.ContentType))
	body, ok := s.S3Object("b", "dir/k.txt")
	require.True(t, ok)
	assert.Equal(t, "hello", string(body))
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("dir/k.txt")})
	require.NoError(t, err)
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("dir/k.txt")})
	var nsk *s3types.NoSuchKey
	require.True(t, errors.As(err, &nsk), "%T %v", err, err)
}

func TestDecodeAWSChunked(t *testing.T) {
	got, err := decodeAWSChunked([]byte("5;chunk-signature=abc\r\nhello\r\n3\r\n, w\r\n0\r\nx-amz-checksum-crc32:AAAA\r\n\r\n"))
	require.NoError(t, err)
	assert.Equal(t, "hello, w", string(got))
	_, err = decodeAWSChunked([]byte("5\r\nhel"))
	assert.Error(t, err)
	_, err = decodeAWSChunked([]byte("zz\r\n"))
	assert.Error(t, err)
}

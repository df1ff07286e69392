package sagemaker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// ErrNoObject is what an ObjectStore's Get returns, wrapped or not, when
// no object is at the location (yet).
var ErrNoObject = errors.New("no such object")

// Object is an object read from a store.
type Object struct {
	Body        []byte
	ContentType string
}

// ObjectStore is where asynchronous inference reads its results and
// writes large inputs: S3 in the cloud (S3Store), anything in tests.
// Locations are s3://BUCKET/KEY URIs. Implementations are safe for
// concurrent use.
type ObjectStore interface {
	// Get returns the object at uri, or an error that errors.Is
	// ErrNoObject when there is none.
	Get(ctx context.Context, uri string) (*Object, error)
	// Put writes body at uri.
	Put(ctx context.Context, uri string, body []byte, contentType string) error
}

// ParseS3URI splits an s3://BUCKET/KEY URI.
func ParseS3URI(uri string) (bucket, key string, err error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "s3" || u.Host == "" || strings.TrimPrefix(u.Path, "/") == "" {
		return "", "", fmt.Errorf("%q is not an s3://BUCKET/KEY URI", uri)
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// S3Store is an ObjectStore on Amazon S3 (GetObject, PutObject).
type S3Store struct {
	client *s3.Client
	max    int64
}

// NewS3Store returns a store on client. maxBytes bounds an object read
// (0: DefaultMaxResponseBytes).
func NewS3Store(client *s3.Client, maxBytes int64) *S3Store {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResponseBytes
	}
	return &S3Store{client: client, max: maxBytes}
}

// s3Store returns an S3Store on the adapter's configuration and HTTP
// client, at endpoint (path-style) when given.
func (a *Adapter) s3Store(endpoint string) (*S3Store, error) {
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "sagemaker: S3Endpoint %q is not an absolute URL", endpoint)
		}
		if u.Scheme != "https" && !a.opts.AllowInsecureHTTP {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "sagemaker: S3Endpoint %q is plain http: requests are signed with AWS credentials (set AllowInsecureHTTP for a local emulator)", endpoint)
		}
	}
	c := s3.NewFromConfig(a.cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
		if a.opts.HTTPClient != nil {
			o.HTTPClient = a.opts.HTTPClient
		}
		o.Retryer = aws.NopRetryer{}
		// SageMaker writes its outputs without a checksum: the SDK would
		// log each read that it cannot validate.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return NewS3Store(c, a.opts.MaxResponseBytes), nil
}

// Get implements ObjectStore with GetObject.
func (s *S3Store) Get(ctx context.Context, uri string) (*Object, error) {
	bucket, key, err := ParseS3URI(uri)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker: "+err.Error())
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, s3Error(err)
	}
	defer func() { _ = out.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(out.Body, s.max+1))
	if err != nil {
		return nil, mapError(err)
	}
	if int64(len(b)) > s.max {
		e := errcodes.Errorf(errcodes.PayloadTooLarge, "sagemaker: the object at %s exceeds %d bytes", uri, s.max)
		e.Provider = cloudreq.ProviderAWS
		return nil, e
	}
	return &Object{Body: b, ContentType: aws.ToString(out.ContentType)}, nil
}

// Put implements ObjectStore with PutObject.
func (s *S3Store) Put(ctx context.Context, uri string, body []byte, contentType string) error {
	bucket, key, err := ParseS3URI(uri)
	if err != nil {
		return errcodes.Wrap(err, errcodes.InvalidParam, "sagemaker: "+err.Error())
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentType: optional(contentType), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return s3Error(err)
	}
	return nil
}

// noObject is a missing object: ErrNoObject, and the S3 error it came from.
type noObject struct{ err error }

func (e *noObject) Error() string        { return "sagemaker: no such object" }
func (e *noObject) Unwrap() []error      { return []error{ErrNoObject, e.err} }
func (e *noObject) Is(target error) bool { return target == ErrNoObject }

// s3Error maps an S3 error: a missing key is ErrNoObject; the S3 codes
// below have their own; anything else is mapped as SageMaker's errors are.
func s3Error(err error) error {
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return &noObject{err}
	}
	var api smithy.APIError
	code := ""
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	status, reqID, header := responseOf(err)
	if status == 404 && code != "NoSuchBucket" {
		return &noObject{err} // a HEAD-style 404 without a body
	}
	var c errcodes.Code
	switch code {
	case "NoSuchBucket":
		c = errcodes.NotFound
	case "AccessDenied", "AllAccessDisabled":
		c = errcodes.PermissionDenied
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken":
		c = errcodes.Unauthenticated
	case "SlowDown":
		c = errcodes.Throttled
	default:
		e := mapError(err)
		e.Message = "sagemaker: S3: " + e.Message
		return e
	}
	e := errcodes.Wrap(err, c, "sagemaker: S3 "+code+": "+redact(api.ErrorMessage()))
	fill(e, code, status, reqID, header)
	e.Retryable = c.Retryable()
	return e
}

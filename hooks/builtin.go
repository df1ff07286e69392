package hooks

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Names of the built-in hooks in the chains Default returns.
const (
	NamePayloadLimit = "payload-limit"
	NameRequestID    = "request-id"
)

// DefaultMaxPayload is the payload limit Default applies: 6 MB, SageMaker's
// real-time invocation limit and the smallest of the providers'.
const DefaultMaxPayload = 6 << 20

// Default returns a Set with the built-ins: PayloadLimit(DefaultMaxPayload)
// and RequestID. The fields each provider requires are not among them: the
// adapters check those themselves (cloudreq.Validator), before these hooks
// run. RequiredFields adds rules of one's own.
func Default() *Set {
	s := &Set{}
	_ = s.Validate.Add(NamePayloadLimit, PayloadLimit(DefaultMaxPayload))
	_ = s.Serialize.Add(NameRequestID, RequestID())
	return s
}

// Field names a CloudRequest field that RequiredFields can demand.
type Field string

// Fields RequiredFields knows.
const (
	FieldEndpoint    Field = "Target.Endpoint"
	FieldModel       Field = "Target.Model"
	FieldVariant     Field = "Target.Variant"
	FieldBody        Field = "Payload.Body"
	FieldContentType Field = "Payload.ContentType"
	FieldMessages    Field = "Generate.Messages"
	FieldMaxTokens   Field = "Generate.MaxTokens"
)

// RequiredFields returns a PreValidator that refuses a request missing any
// field the table lists for its "provider/service/action" key, with
// ERR_INVALID_PARAM; a request of a kind the table does not list passes.
// It is for rules of one's own, beyond what the adapters require: a
// deployment that must always name a variant, say,
//
//	set.Validate.Add("variant", hooks.RequiredFields(map[string][]hooks.Field{
//		"aws/sagemaker/invoke": {hooks.FieldVariant},
//	}))
//
// The table is read once, here: later changes to it do not reach the
// returned hook.
func RequiredFields(table map[string][]Field) PreValidator {
	// The table is keyed by a struct here, so that looking a request up
	// builds no string: this runs on every call. A key that is not three
	// names never matches a request, as before.
	// The latest lookup is kept too: calls repeat one kind of request, and
	// comparing three names costs less than hashing them.
	type key struct{ provider, service, action string }
	type hit struct {
		k      key
		fields []Field
	}
	byKey := make(map[key][]Field, len(table))
	for k, fields := range table {
		if p := strings.SplitN(k, "/", 3); len(p) == 3 {
			byKey[key{p[0], p[1], p[2]}] = slices.Clone(fields)
		}
	}
	var last atomic.Pointer[hit]
	lookup := func(k key) []Field {
		if h := last.Load(); h != nil && h.k == k {
			return h.fields
		}
		h := &hit{k, byKey[k]}
		last.Store(h)
		return h.fields
	}
	return PreValidateFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
		var missing []string
		for _, f := range lookup(key{r.Provider, r.Service, r.Action}) {
			if !present(r, f) {
				missing = append(missing, string(f))
			}
		}
		if len(missing) > 0 {
			return errcodes.Errorf(errcodes.InvalidParam, "%s %s needs %s", r.Provider+"/"+r.Service, r.Action, strings.Join(missing, ", "))
		}
		return nil
	})
}

func present(r *cloudreq.CloudRequest, f Field) bool {
	switch f {
	case FieldEndpoint:
		return r.Target.Endpoint != ""
	case FieldModel:
		return r.Target.Model != ""
	case FieldVariant:
		return r.Target.Variant != ""
	case FieldBody:
		return len(r.Payload.Body) > 0 || r.Payload.Reader != nil
	case FieldContentType:
		return r.Payload.ContentType != ""
	case FieldMessages:
		return r.Generate != nil && len(r.Generate.Messages) > 0
	case FieldMaxTokens:
		return r.Generate != nil && r.Generate.MaxTokens > 0
	}
	return true
}

// PayloadLimit returns a PreValidator that refuses a request whose payload,
// or generate messages, exceed max bytes, with ERR_PAYLOAD_TOO_LARGE. A
// one-shot Payload.Reader is not counted: its size is unknown until it is
// sent.
func PayloadLimit(max int) PreValidator {
	return PreValidateFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
		n := len(r.Payload.Body)
		if g := r.Generate; g != nil {
			for _, m := range g.Messages {
				n += len(m.Content)
			}
		}
		if n > max {
			e := errcodes.Errorf(errcodes.PayloadTooLarge, "payload of %d bytes exceeds the %d-byte limit", n, max)
			e.Retryable = false
			return e
		}
		return nil
	})
}

// RequestID returns a PreSerializer that gives a request without a
// RequestID a random one (32 hex digits), so that client and provider logs
// can be joined. The id is unique, not secret: it comes from math/rand/v2's
// securely seeded generator, which costs no system call per request.
func RequestID() PreSerializer {
	return PreSerializeFunc(func(_ context.Context, r *cloudreq.CloudRequest) error {
		if r.RequestID == "" {
			var b [16]byte
			var h [32]byte
			binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
			binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
			hex.Encode(h[:], b[:])
			r.RequestID = string(h[:]) // the only allocation
		}
		return nil
	})
}

// RedactHeaders returns a copy of h with the values of every credential
// header (cloudreq.CredentialHeaders: Authorization, which carries EAS
// signatures too, api keys, session tokens, cookies) replaced by
// cloudreq.Redacted. Names are matched case-insensitively, so a key that
// was put in the map without canonicalization ("api-key", gRPC's
// lower-case metadata) is hidden too.
func RedactHeaders(h http.Header) http.Header {
	out := h.Clone()
	for k := range out {
		if cloudreq.IsCredentialHeader(k) {
			out[k] = []string{cloudreq.Redacted}
		}
	}
	return out
}

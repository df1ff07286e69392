package emulator

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/hooks"
)

// NameStartReport is the name to give StartReport's hook in a hooks.Set's
// PostDeserialize chain.
const NameStartReport = "emulator-start-report"

// headerPrefix starts the name of every ground-truth header the emulator
// sends.
const headerPrefix = "X-Emulator-"

// maxSetupMs bounds the X-Emulator-Cold-Start-Ms a report may carry: a
// longer (or non-positive, or unreadable) setup time is ignored, the
// cold-start flag kept.
const maxSetupMs = 1e12

// StartReport returns the PostDeserialize hook that reads the emulator's
// report from each answered attempt's CloudResponse.Header (a stream's
// when it opens). Adapters know nothing of the emulator; this hook is
// what makes its ground truth part of a response:
//
//   - X-Emulator-Cold-Start ("true" or "false", as strconv.ParseBool reads
//     it) becomes CloudResponse.ServerStart, with X-Emulator-Cold-Start-Ms
//     (fractional milliseconds, in (0, 1e12)) as its Setup, so that the
//     start is classified on the server's own word;
//   - every X-Emulator-* header (its first value) is kept in
//     CloudResponse.Metadata under its canonical name, among them
//     X-Emulator-Request-Id, the key of the emulator's Record;
//   - a response the adapter found no request id for gets
//     X-Emulator-Request-Id as its RequestID.
//
// A response without the report is left as it is, so the hook is harmless
// against a real cloud, which sends none of these headers; install it for
// emulator targets only all the same. It never vetoes. Install it first in
// the chain, so that the hooks after it see what it filled:
//
//	set := hooks.Default()
//	_ = set.Deserialize.Add(emulator.NameStartReport, emulator.StartReport())
//
// or, with any cloudreq.Hooks, pass WithStartReport to cloudreq.New.
func StartReport() hooks.PostDeserializer {
	return hooks.PostDeserializeFunc(func(_ context.Context, _ *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, _ error) error {
		report(resp)
		return nil
	})
}

// WithStartReport returns a cloudreq option function that runs
// StartReport before the client's own PostDeserialize hooks (Options.Hooks,
// which it wraps and leaves unchanged; nil runs StartReport alone). Pass
// it to cloudreq.New for a client of emulator targets.
func WithStartReport() func(*cloudreq.Options) {
	return func(o *cloudreq.Options) {
		if _, ok := o.Hooks.(startReportHooks); ok {
			return
		}
		o.Hooks = startReportHooks{next: o.Hooks}
	}
}

// startReportHooks runs report, then next's PostDeserialize; the other
// phases are next's.
type startReportHooks struct{ next cloudreq.Hooks }

func (h startReportHooks) PreValidate(ctx context.Context, req *cloudreq.CloudRequest) error {
	if h.next == nil {
		return nil
	}
	return h.next.PreValidate(ctx, req)
}

func (h startReportHooks) PreSerialize(ctx context.Context, req *cloudreq.CloudRequest) error {
	if h.next == nil {
		return nil
	}
	return h.next.PreSerialize(ctx, req)
}

func (h startReportHooks) PostDeserialize(ctx context.Context, req *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
	report(resp)
	if h.next == nil {
		return nil
	}
	return h.next.PostDeserialize(ctx, req, resp, err)
}

// report fills resp from the emulator's headers in resp.Header (see
// StartReport).
func report(resp *cloudreq.CloudResponse) {
	if resp == nil || len(resp.Header) == 0 {
		return
	}
	h := resp.Header
	if ss := serverStart(h); ss != nil {
		resp.ServerStart = ss
	}
	for k, vs := range h {
		if len(vs) == 0 || len(k) <= len(headerPrefix) || !strings.EqualFold(k[:len(headerPrefix)], headerPrefix) {
			continue
		}
		if resp.Metadata == nil {
			resp.Metadata = map[string]string{}
		}
		resp.Metadata[http.CanonicalHeaderKey(k)] = vs[0]
	}
	if resp.RequestID == "" {
		resp.RequestID = h.Get(HeaderRequestID)
	}
}

// serverStart reads X-Emulator-Cold-Start and X-Emulator-Cold-Start-Ms
// (see StartReport); nil when the flag is absent or unreadable. An
// absent flag (any server but the emulator) costs no parse: a failed
// one allocates its error, on every response.
func serverStart(h http.Header) *cloudreq.ServerStart {
	v := strings.TrimSpace(h.Get(HeaderColdStart))
	if v == "" {
		return nil
	}
	cold, err := strconv.ParseBool(v)
	if err != nil {
		return nil
	}
	ss := &cloudreq.ServerStart{Cold: cold}
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get(HeaderColdStartMs)), 64); err == nil && ms > 0 && ms < maxSetupMs {
		ss.Setup = time.Duration(ms * float64(time.Millisecond))
	}
	return ss
}

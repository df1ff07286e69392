package vertex

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// restStatus turns a Google REST error body ({"error":{"code":<HTTP>,
// "message","status":<name>,"details":[…]}}) into the gRPC status the same
// error is over gRPC.
func restStatus(t *testing.T, body string) *status.Status {
	t.Helper()
	var outer struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &outer))
	var name string
	require.NoError(t, json.Unmarshal(outer.Error["status"], &name))
	var code codes.Code
	for c, n := range statusNames {
		if n == name {
			code = c
		}
	}
	require.NotZero(t, code, "status %q", name)
	delete(outer.Error, "status")
	delete(outer.Error, "code") // the HTTP status; google.rpc.Status has the gRPC code
	b, err := json.Marshal(outer.Error)
	require.NoError(t, err)
	var sp spb.Status
	require.NoError(t, protojson.Unmarshal(b, &sp), "%s", b)
	sp.Code = int32(code)
	return status.FromProto(&sp)
}

// Google error bodies as the services send them (REST form; the gRPC
// status carries the same details).
const (
	// A per-minute token quota, with the delay to wait (Gemini API).
	perMinuteTokens = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_input_token_count","quotaId":"GenerateContentInputTokensPerModelPerMinute-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"250000"}]},
		{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}`
	// A per-day request quota spent, beside per-minute ones.
	perDayAndMinute = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[
			{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.0-flash"}},
			{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.0-flash"}}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}`
	// The quota system's ErrorInfo of a per-minute limit, no QuotaFailure.
	errorInfoPerMinute = `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute' and limit 'GenerateContent request limit per minute for a region' of service 'generativelanguage.googleapis.com' for consumer 'project_number:1'.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com","quota_metric":"generativelanguage.googleapis.com/generate_content_requests","quota_limit":"GenerateContentRequestsPerMinutePerProjectPerRegion","quota_location":"us-west4","consumer":"projects/1"}}]}}`
	// The same ErrorInfo for a per-day limit.
	errorInfoPerDay = `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per day'.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com","quota_metric":"generativelanguage.googleapis.com/generate_content_requests","quota_limit":"GenerateContentRequestsPerDayPerProjectPerRegion"}}]}}`
	// Vertex's per-base-model per-minute quota (named by its metric).
	vertexPerMinute = `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model with base model: gemini-1.5-pro. Please submit a quota increase request.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"project:p","apiService":"aiplatform.googleapis.com","quotaMetric":"aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model","quotaId":"GenerateContentRequestsPerMinutePerProjectPerBaseModel","quotaDimensions":{"base_model":"gemini-1.5-pro","region":"us-central1"}}]}]}}`
	// A quota with no period (an allocation), no RetryInfo.
	absolute = `{"error":{"code":429,"message":"Quota 'CPUS_PER_VM_FAMILY' exceeded. Limit: 24.0 in region us-central1.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"project:p","description":"Quota 'CPUS_PER_VM_FAMILY' exceeded.","quotaMetric":"compute.googleapis.com/cpus_per_vm_family","quotaId":"CPUS-PER-VM-FAMILY-per-project-region","quotaDimensions":{"region":"us-central1","vm_family":"N1"},"quotaValue":"24"}]}]}}`
	// A violation that names no period, described only.
	dailyDescription = `{"error":{"code":429,"message":"Daily Limit for read operations exceeded","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"project:p","description":"Daily Limit for read operations exceeded"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"5s"}]}}`
	legacyPer100s = `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per 100 seconds per user'.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"user:u","description":"Queries per 100 seconds per user"}]}]}}`
	// The emulator's quota answer: a quota with no period, no RetryInfo.
	noPeriod = `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: m. Please submit a quota increase request.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"QUOTA_EXCEEDED","domain":"aiplatform.googleapis.com"},
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"aiplatform.googleapis.com/online_prediction_requests_per_base_model","description":"Quota exceeded."}]}]}}`
	noPeriodSoon = `{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"project:p","description":"Quota exceeded.","quotaId":"OnlinePredictionRequestsPerBaseModel"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"5s"}]}}`
	noPeriodLate = `{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"subject":"project:p","description":"Quota exceeded.","quotaId":"OnlinePredictionRequestsPerBaseModel"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"60s"}]}}`
)

// TestQuotaClassification: RESOURCE_EXHAUSTED with quota details is
// ERR_THROTTLED (retryable) when the quota is a rate (per second, per
// minute, per 100 s) or, naming no period, when the server asks for a
// retry within quotaRetryBound; it is ERR_QUOTA_EXCEEDED (not retryable)
// for a per-day (or longer) quota and an allocation. Details keep the
// deciding violation.
func TestQuotaClassification(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		want       errcodes.Code
		retryAfter time.Duration
		details    map[string]string
	}{
		{"per-minute tokens", perMinuteTokens, errcodes.Throttled, 26 * time.Second, map[string]string{
			"quota_id":         "GenerateContentInputTokensPerModelPerMinute-FreeTier",
			"quota_metric":     "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
			"quota_dimensions": "location=global,model=gemini-2.5-flash",
			"quota_value":      "250000",
		}},
		{"per-day beside per-minute", perDayAndMinute, errcodes.QuotaExceeded, 47 * time.Second, map[string]string{
			"quota_id":  "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
			"quota_ids": "GenerateRequestsPerDayPerProjectPerModel-FreeTier,GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
		}},
		{"ErrorInfo per-minute limit", errorInfoPerMinute, errcodes.Throttled, 0, map[string]string{
			"reason": "RATE_LIMIT_EXCEEDED", "quota_limit": "GenerateContentRequestsPerMinutePerProjectPerRegion",
			"quota_metric": "generativelanguage.googleapis.com/generate_content_requests",
		}},
		{"ErrorInfo per-day limit", errorInfoPerDay, errcodes.QuotaExceeded, 0, map[string]string{
			"quota_limit": "GenerateContentRequestsPerDayPerProjectPerRegion",
		}},
		{"Vertex per-minute base model", vertexPerMinute, errcodes.Throttled, 0, map[string]string{
			"quota_id": "GenerateContentRequestsPerMinutePerProjectPerBaseModel", "quota_subject": "project:p",
			"quota_api_service": "aiplatform.googleapis.com", "quota_dimensions": "base_model=gemini-1.5-pro,region=us-central1",
		}},
		{"allocation", absolute, errcodes.QuotaExceeded, 0, map[string]string{
			"quota_id": "CPUS-PER-VM-FAMILY-per-project-region", "quota_value": "24",
		}},
		{"daily by description", dailyDescription, errcodes.QuotaExceeded, 5 * time.Second, map[string]string{
			"quota_description": "Daily Limit for read operations exceeded",
		}},
		{"per 100 seconds", legacyPer100s, errcodes.Throttled, 0, nil},
		{"no period, no retry", noPeriod, errcodes.QuotaExceeded, 0, map[string]string{
			"reason": "QUOTA_EXCEEDED", "quota_subject": "aiplatform.googleapis.com/online_prediction_requests_per_base_model",
		}},
		{"no period, retry soon", noPeriodSoon, errcodes.Throttled, 5 * time.Second, nil},
		{"no period, retry late", noPeriodLate, errcodes.QuotaExceeded, 60 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errcodes.From(mapError(restStatus(t, tt.body).Err()))
			require.NotNil(t, e)
			assert.Equal(t, tt.want, e.Code, "%v", e)
			assert.Equal(t, tt.want.Retryable(), e.Retryable)
			assert.Equal(t, tt.retryAfter, e.RetryAfter)
			assert.Equal(t, "RESOURCE_EXHAUSTED", e.ProviderCode)
			assert.Equal(t, 429, e.HTTPStatus)
			for k, v := range tt.details {
				assert.Equal(t, v, e.Details[k], k)
			}
		})
	}
}

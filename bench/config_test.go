package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

func TestLoadPlanYAML(t *testing.T) {
	p, err := LoadPlan("testdata/plan.yaml")
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	require.Len(t, p.Targets, 2)
	a, b := p.Targets[0], p.Targets[1]
	assert.Equal(t, cloudreq.ProviderOpenAI, a.Provider)
	assert.Equal(t, cloudreq.ServiceOpenAICompatible, a.Service)
	assert.Equal(t, cloudreq.ActionGenerate, a.Action)
	assert.True(t, a.Stream)
	assert.Equal(t, 256, a.Payload.PromptTokens)
	assert.Equal(t, cloudreq.ProviderAWS, b.Provider)
	assert.Equal(t, cloudreq.ServiceSageMaker, b.Service)
	assert.Equal(t, cloudreq.ActionInvoke, b.Action, "a payload file means invoke")
	assert.Contains(t, string(b.Payload.body), "max_new_tokens")
	assert.Equal(t, LoadPoisson, p.Load.Model)
	assert.Equal(t, 20.0, p.Load.Rate)
	assert.Equal(t, Duration(30*time.Second), p.Limits.Duration)
	assert.Equal(t, 2, p.Limits.Warmup)
	assert.Equal(t, Duration(DefaultLateAfter), p.Load.LateAfter)
	require.NotNil(t, p.Mix)
	assert.Equal(t, 0.45, p.Mix.Classes[1].Weight)
	assert.Equal(t, int64(300*time.Millisecond), p.Mix.Classes[0].SLAs[0].Threshold)
	assert.Equal(t, stats.StartsWarm, p.SLAs[0].Starts)
	slas := p.slas()
	require.Len(t, slas, 2)
	assert.Equal(t, "/api/order/create", slas[1].Class, "a class's SLA covers its class")
	assert.Equal(t, uint64(9), p.Seed)

	req := buildRequest(&p.Targets[1], &p.Mix.Classes[0])
	assert.Equal(t, "/api/order/create", req.Class)
	assert.Equal(t, "bench", req.Header.Get("X-Team"))
	gen := buildRequest(&p.Targets[0], nil)
	require.NotNil(t, gen.Generate)
	assert.Equal(t, 64, gen.Generate.MaxTokens)
}

func TestParsePlanJSONEqualsYAML(t *testing.T) {
	y, err := LoadPlan("testdata/plan.yaml")
	require.NoError(t, err)
	b, err := json.Marshal(y)
	require.NoError(t, err)
	j, err := ParsePlan(b)
	require.NoError(t, err)
	assert.Equal(t, y, j)
}

func TestParsePlanErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"unknown field", "targets: []\nlod: {}\n", "lod"},
		{"unknown json field", `{"targetz": []}`, "targetz"},
		{"bad duration", "limits: {duration: soon}\n", "bad duration"},
		{"json type error has its line", "{\"targets\": [],\n\"limits\": {\"requests\": \"x\"}}", "line 2: json: cannot unmarshal string"},
		{"json syntax error has its line", "{\n\"targets\": [],\n\n\"seed\": 1,,\n}", "line 4: invalid character ','"},
		{"yaml duration out of range", "limits: {duration: 1e300}\n", "bad duration"},
		{"yaml duration not a number", "limits: {duration: NaN}\n", "bad duration"},
		{"json duration out of range", `{"limits": {"duration": 1e300}}`, "bad duration"},
		{"json duration string out of range", `{"limits": {"duration": "1e13"}}`, "bad duration"},
		{"json unknown field has its line", "{\"seed\": 1,\n\"targetz\": [],\n\"limits\": {},\n\"parallel\": false\n}", "line 2: json: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePlan([]byte(tt.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "ERR_INVALID_PARAM")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestPrepareRejects(t *testing.T) {
	ok := func() *Plan {
		return &Plan{Targets: []Target{{Provider: "openai", Model: "m"}}, Limits: Limits{Requests: 1}}
	}
	require.NoError(t, ok().Prepare())
	tests := []struct {
		name string
		edit func(*Plan)
		want string
	}{
		{"no targets", func(p *Plan) { p.Targets = nil }, "no targets"},
		{"bad provider", func(p *Plan) { p.Targets[0].Provider = "ibm" }, "provider"},
		{"wrong service", func(p *Plan) { p.Targets[0].Service = "vertex" }, "serves"},
		{"no endpoint", func(p *Plan) { p.Targets[0].Model = "" }, "endpoint or a model"},
		{"duplicate names", func(p *Plan) { p.Targets = append(p.Targets, p.Targets[0]) }, "two targets"},
		{"no limit", func(p *Plan) { p.Limits = Limits{} }, "duration or a request count"},
		{"open loop without rate", func(p *Plan) { p.Load.Model = LoadConstant }, "positive --rate"},
		{"unknown model", func(p *Plan) { p.Load.Model = "burst" }, "load model"},
		{"bad ladder", func(p *Plan) { p.Load = Load{Model: LoadLadder, Ladder: Ladder{Backoff: 2}} }, "back-off"},
		{"bad action", func(p *Plan) { p.Targets[0].Action = "train" }, "action"},
		{"invoke without body", func(p *Plan) { p.Targets[0].Action = "invoke" }, "payload"},
		{"missing payload file", func(p *Plan) { p.Targets[0].Payload.File = "testdata/nope" }, "payload file"},
		{"bad sla", func(p *Plan) { p.SLAs = []stats.SLA{{Metric: latency.TTFT, Percentile: 95}} }, "threshold"},
		{"negative limit", func(p *Plan) { p.Limits.Warmup = -1 }, "negative"},
		{"bad network", func(p *Plan) { p.Targets[0].Network = "delay=20" }, `target "m": network: impair: delay "20" is not a duration`},
		{"negative late after", func(p *Plan) { p.Load.LateAfter = Duration(-5 * time.Millisecond) }, "late after"},
		{"rate beyond any client", func(p *Plan) { p.Load = Load{Model: LoadPoisson, Rate: 1e300} }, "at most"},
		{"ladder target beyond any client", func(p *Plan) { p.Load = Load{Model: LoadLadder, Ladder: Ladder{Target: 1e300}} }, "at most"},
		{"ladder step too short to measure", func(p *Plan) {
			p.Load = Load{Model: LoadLadder, Ladder: Ladder{Step: Duration(time.Nanosecond)}}
		}, "step length"},
		{"ttft ladder, whole bodies", func(p *Plan) {
			p.Load = Load{Model: LoadLadder, Ladder: Ladder{Metric: MetricTTFT}}
			p.Targets[0].Stream = false
		}, "needs streamed targets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok()
			tt.edit(p)
			err := p.Prepare()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "ERR_INVALID_PARAM")
		})
	}
}

func TestPrepareRateWithoutModelIsAnOpenLoop(t *testing.T) {
	// As the CLI's --rate: a rate and no model is a constant-rate open
	// loop, never a closed loop that ignores the rate.
	p := &Plan{Targets: []Target{{Provider: "openai", Model: "m"}}, Load: Load{Rate: 50}, Limits: Limits{Requests: 1}}
	require.NoError(t, p.Prepare())
	assert.Equal(t, LoadConstant, p.Load.Model)
	p = &Plan{Targets: []Target{{Provider: "openai", Model: "m"}}, Limits: Limits{Requests: 1}}
	require.NoError(t, p.Prepare())
	assert.Equal(t, LoadClosed, p.Load.Model)
}

func TestPrepareNetworkCanonical(t *testing.T) {
	p := &Plan{Targets: []Target{{Provider: "openai", Model: "m", Network: "loss=0.5% delay=20ms down.delay=30ms"}}, Limits: Limits{Requests: 1}}
	require.NoError(t, p.Prepare())
	assert.Equal(t, "up.delay=20ms,up.loss=0.5%,down.delay=30ms,down.loss=0.5%", p.Targets[0].Network)
}

func TestPublicPlanHidesSecrets(t *testing.T) {
	p := &Plan{Targets: []Target{{Provider: "openai", Model: "m", Header: map[string]string{"Authorization": "Bearer sk-123"},
		Payload: Payload{Body: `{"secret":"x"}`}}}, Limits: Limits{Requests: 1},
		Mix: &Mix{Classes: []Class{
			{Name: "a", Weight: 1, Header: map[string]string{"X-Api-Key": "mixkey-456"}, Payload: &Payload{Body: `{"mixbody":"y"}`}},
			{Name: "b", Weight: 1},
		}}}
	require.NoError(t, p.Prepare())
	b, err := json.Marshal(p.public())
	require.NoError(t, err)
	assert.NotContains(t, string(b), "sk-123")
	assert.NotContains(t, string(b), `secret`)
	assert.NotContains(t, string(b), "mixkey-456", "a class's header values")
	assert.NotContains(t, string(b), "mixbody", "a class's inline body")
	assert.Contains(t, string(b), `"X-Api-Key":"[redacted]"`, "the header's name stays")
	assert.Equal(t, "Bearer sk-123", p.Targets[0].Header["Authorization"], "the plan itself is unchanged")
	assert.Equal(t, "mixkey-456", p.Mix.Classes[0].Header["X-Api-Key"], "the plan's mix is unchanged")
	assert.Equal(t, `{"mixbody":"y"}`, p.Mix.Classes[0].Payload.Body, "the plan's mix is unchanged")
}

func TestPromptLength(t *testing.T) {
	for _, n := range []int{0, 1, 512, 4096} {
		p := Prompt(n)
		assert.Len(t, p, 4*n)
		if n >= 512 {
			assert.Greater(t, len(strings.Fields(p)), n/2, "real words, not one blob")
		}
	}
	assert.Equal(t, Prompt(64), Prompt(64))
}

func FuzzParsePlan(f *testing.F) {
	b, err := os.ReadFile("testdata/plan.yaml")
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`{"targets":[{"provider":"openai","model":"m"}],"limits":{"requests":3}}`))
	f.Add([]byte("load: {model: ladder, ladder: {step: 1s, high_water: 200}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePlan(b)
		if err != nil {
			return
		}
		for i := range p.Targets {
			p.Targets[i].Payload.File = "" // never read files named by fuzz input
		}
		if p.Mix != nil {
			for i := range p.Mix.Classes {
				if pl := p.Mix.Classes[i].Payload; pl != nil {
					pl.File = ""
				}
			}
		}
		if p.Prepare() != nil {
			return
		}
		for i := range p.Targets {
			_ = buildRequest(&p.Targets[i], nil)
		}
		if p.Mix != nil {
			NewPicker(p.Mix, p.Seed).Next()
		}
	})
}

// TestURLCredentialsStayOutOfResults: an endpoint or base URL's user info
// and query values may be credentials (a gateway's key=…): a target named
// after its endpoint URL is named without them, and a result's plan and
// target results keep only the query's parameter names. The plan itself
// keeps them, to send.
func TestURLCredentialsStayOutOfResults(t *testing.T) {
	const endpoint = "https://user:PASSWORD@gw.example/v1?api-version=2024&key=SECRETQ#FRAG"
	p := &Plan{Targets: []Target{{Provider: "openai", Model: "m", Endpoint: endpoint,
		URL: "https://u:BASEPASS@gw.example/?code=BASESECRET"}}, Limits: Limits{Requests: 1}}
	require.NoError(t, p.Prepare())
	assert.Equal(t, "https://gw.example/v1", p.Targets[0].Name)
	assert.Equal(t, endpoint, p.Targets[0].Endpoint, "the plan itself is unchanged")
	col, err := newCollector(p, &p.Targets[0])
	require.NoError(t, err)
	r := newResult(p)
	r.Targets = append(r.Targets, col.result())
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	for _, secret := range []string{"user:", "PASSWORD", "SECRETQ", "FRAG", "BASEPASS", "BASESECRET"} {
		assert.NotContains(t, b.String(), secret)
	}
	assert.Equal(t, "https://gw.example/v1?api-version=[redacted]&key=[redacted]", r.Plan.Targets[0].Endpoint)
	assert.Equal(t, "https://gw.example/?code=[redacted]", r.Plan.Targets[0].URL)
	assert.Equal(t, r.Plan.Targets[0].Endpoint, r.Targets[0].Endpoint)
	assert.Equal(t, "ep", publicURL("ep"), "an endpoint name is kept")
}

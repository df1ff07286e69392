package vertex

import (
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// resource is a parsed Vertex AI resource name: an endpoint
// ("projects/p/locations/l/endpoints/e") or a publisher model
// ("projects/p/locations/l/publishers/pub/models/m").
type resource struct {
	Project   string
	Location  string
	Endpoint  string // set for endpoints
	Publisher string // set for publisher models
	Model     string // set for publisher models
}

// String returns the full resource name.
func (r resource) String() string {
	base := "projects/" + r.Project + "/locations/" + r.Location
	if r.Endpoint != "" {
		return base + "/endpoints/" + r.Endpoint
	}
	return base + "/publishers/" + r.Publisher + "/models/" + r.Model
}

// parseResource parses a full resource name. It accepts exactly the two
// shapes above, with non-empty ids made of validID characters.
func parseResource(name string) (resource, bool) {
	seg := strings.Split(name, "/")
	var r resource
	switch {
	case len(seg) == 6 && seg[0] == "projects" && seg[2] == "locations" && seg[4] == "endpoints":
		r = resource{Project: seg[1], Location: seg[3], Endpoint: seg[5]}
		return r, validID(r.Project) && validID(r.Location) && validID(r.Endpoint)
	case len(seg) == 8 && seg[0] == "projects" && seg[2] == "locations" && seg[4] == "publishers" && seg[6] == "models":
		r = resource{Project: seg[1], Location: seg[3], Publisher: seg[5], Model: seg[7]}
		return r, validID(r.Project) && validID(r.Location) && validID(r.Publisher) && validID(r.Model)
	}
	return resource{}, false
}

// validID reports whether s is a usable resource id: 1 to 128 letters,
// digits, '-', '_', '.' or '@' (model versions such as "gemini-2.0-flash@001").
func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '_', c == '.', c == '@':
		default:
			return false
		}
	}
	return true
}

// resolveTarget turns a request's Target into the resource name the call
// goes to. Target.Endpoint wins over Target.Model:
//
//   - a full resource name is used as it is;
//   - a bare endpoint id becomes projects/{Project}/locations/{Location}/endpoints/{id};
//   - with no endpoint, Target.Model names a publisher model: a full resource
//     name, "publishers/{pub}/models/{m}", or a bare model id of publisher
//     "google".
func resolveTarget(t cloudreq.Target, project, location string) (resource, *errcodes.Error) {
	bad := func(format string, args ...any) (resource, *errcodes.Error) {
		return resource{}, invalid(format, args...)
	}
	name := t.Endpoint
	if name == "" {
		name = t.Model
	}
	if strings.HasPrefix(name, "projects/") {
		r, ok := parseResource(name)
		if !ok {
			return bad("malformed resource name %q: want projects/P/locations/L/endpoints/E or projects/P/locations/L/publishers/PUB/models/M", name)
		}
		return r, nil
	}
	needScope := func() *errcodes.Error {
		if !validID(project) || !validID(location) {
			_, e := bad("%q is not a full resource name, and Options.Project and Options.Location are not both set to complete it", name)
			return e
		}
		return nil
	}
	if t.Endpoint != "" {
		if !validID(t.Endpoint) {
			return bad("malformed endpoint id %q", t.Endpoint)
		}
		if e := needScope(); e != nil {
			return resource{}, e
		}
		return resource{Project: project, Location: location, Endpoint: t.Endpoint}, nil
	}
	pub, model := "google", t.Model
	if rest, ok := strings.CutPrefix(t.Model, "publishers/"); ok {
		p, m, ok := strings.Cut(rest, "/models/")
		if !ok {
			return bad("malformed publisher model %q: want publishers/PUB/models/M", t.Model)
		}
		pub, model = p, m
	}
	if !validID(pub) || !validID(model) {
		return bad("malformed model name %q", t.Model)
	}
	if e := needScope(); e != nil {
		return resource{}, e
	}
	return resource{Project: project, Location: location, Publisher: pub, Model: model}, nil
}

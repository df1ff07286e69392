package vertex

import (
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
)

// Validate implements cloudreq.Validator: a request needs Target.Endpoint
// (an endpoint id or a full resource name) or, without one, Target.Model
// (a publisher model: "publishers/PUB/models/M", a bare Google model id,
// or a full resource name). A name that is not a full resource name needs
// Options.Project and Options.Location to complete it. Whether a name is
// well formed is checked when the call is made.
func (a *Adapter) Validate(req *cloudreq.CloudRequest) error {
	name := req.Target.Endpoint
	if name == "" {
		name = req.Target.Model
	}
	switch {
	case name == "":
		return invalid("vertex needs Target.Endpoint (an endpoint id or resource name) or Target.Model (a publisher model)")
	case strings.HasPrefix(name, "projects/"):
	case !validID(a.opts.Project) || !validID(a.opts.Location):
		return invalid("vertex needs Options.Project and Options.Location to complete %q, which is not a full resource name", name)
	}
	return nil
}

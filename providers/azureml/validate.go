package azureml

import (
	"strings"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// Validate implements cloudreq.Validator: every request needs
// Target.Endpoint, the endpoint name (placed into Options.EndpointURL) or
// the endpoint's http(s) URL; a name needs Options.Region too when the
// endpoint URL template holds "{region}". Target.Model only fills the
// "model" member of a chat body.
func (a *Adapter) Validate(req *cloudreq.CloudRequest) error {
	ep := req.Target.Endpoint
	switch {
	case ep == "":
		return invalid("azureml needs Target.Endpoint, the endpoint name or URL (Target.Model names no endpoint)")
	case httpadapter.IsAbsoluteURL(ep):
	case strings.Contains(a.opts.EndpointURL, "{region}") && a.opts.Region == "":
		return invalid("azureml needs Options.Region for the endpoint name %q: the endpoint URL template %s holds {region} (or give Target.Endpoint as a URL)",
			ep, templateForMessage(a.opts.EndpointURL))
	}
	return nil
}

package paieas

import (
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/internal/httpadapter"
)

// Validate implements cloudreq.Validator: every request needs
// Target.Endpoint, the service: its full URL (…/api/predict/<service>), or
// its name when Options.Endpoint gives the endpoint root. Target.Model only
// fills the "model" member of an OpenAI-dialect body.
func (a *Adapter) Validate(req *cloudreq.CloudRequest) error {
	svc := req.Target.Endpoint
	switch {
	case svc == "":
		return invalid("pai-eas needs Target.Endpoint, the service name or URL (Target.Model names no service)")
	case httpadapter.IsAbsoluteURL(svc):
	case a.base == "":
		return invalid("pai-eas needs Options.Endpoint for the service name %q (or give Target.Endpoint as the service URL)", svc)
	}
	return nil
}

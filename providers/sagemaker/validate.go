package sagemaker

import (
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Validate implements cloudreq.Validator: every request needs
// Target.Endpoint, the endpoint name. Target.Model (a model of a
// multi-model endpoint) and Target.Variant only narrow it down, so neither
// stands in for it.
func (a *Adapter) Validate(req *cloudreq.CloudRequest) error {
	if req.Target.Endpoint == "" {
		e := errcodes.New(errcodes.InvalidParam, "sagemaker needs Target.Endpoint, the endpoint name (Target.Model alone names no endpoint)")
		e.Provider = cloudreq.ProviderAWS
		return e
	}
	return nil
}

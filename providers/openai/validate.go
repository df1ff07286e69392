package openai

import "github.com/cloudinfer/cloudinfer/cloudreq"

// Validate implements cloudreq.Validator: a request needs Target.Model or
// Target.Endpoint, which is either the model name (used as the model when
// Target.Model is empty) or a server URL that overrides Options.BaseURL.
// A generate request to a URL with no Target.Model sends no "model"
// member, which servers that serve one model accept; an invoke request's
// model is in its body.
func (a *Adapter) Validate(req *cloudreq.CloudRequest) error {
	if req.Target.Model == "" && req.Target.Endpoint == "" {
		return invalid("openai-compatible needs Target.Model, or Target.Endpoint as the model name or the server URL")
	}
	return nil
}

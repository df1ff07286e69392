package bench

import "github.com/cloudinfer/cloudinfer/cloudreq"

// Request returns the request a run sends to t (without a class), for
// callers that send one by hand. Call Plan.Prepare first: it reads payload
// files and fills defaults.
func (t *Target) Request() *cloudreq.CloudRequest { return buildRequest(t, nil) }

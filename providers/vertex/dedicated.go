package vertex

import (
	"net"
	"strings"
)

// HeaderDedicatedEndpointID is the gRPC metadata key that names the
// endpoint of a call to a dedicated endpoint (Options.DedicatedEndpoint).
const HeaderDedicatedEndpointID = "x-vertex-ai-endpoint-id"

// dedicatedHost returns the host:port to dial for a dedicated endpoint's
// DNS name: the name as given (a bare host, a host:port, or an https URL
// as the console shows it), port 443 unless it names one.
func dedicatedHost(dns string) (string, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(dns), "https://"), "/")
	if h == "" || strings.ContainsAny(h, "/?#@ ") {
		return "", invalid("Options.DedicatedEndpoint %q is not a DNS name (ENDPOINT_ID.REGION-PROJECT_NUMBER.prediction.vertexai.goog)", dns)
	}
	if _, _, err := net.SplitHostPort(h); err == nil {
		return h, nil
	}
	return net.JoinHostPort(h, "443"), nil
}

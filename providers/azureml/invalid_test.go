package azureml

import "testing"

// TestInvalidNamesTheProviderOnce: the provider is in the error's head,
// so the message does not repeat it.
func TestInvalidNamesTheProviderOnce(t *testing.T) {
	if got, want := invalid("bad %s", "thing").Error(), "ERR_INVALID_PARAM: azure: bad thing"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

package cloudinfer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if the example leaves goroutines behind (the
// emulator's servers, the client's connections).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

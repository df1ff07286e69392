//go:build !unix

package bench

import "time"

// processCPU reports -1: CPU time is not measured on this system.
func processCPU() time.Duration { return -1 }

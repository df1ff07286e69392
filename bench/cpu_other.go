//go:build !unix

package bench

import "time"

// processCPU reports -1: CPU time is not measured on this system.
func processCPU() time.Duration { return -1 }

// machineCPU reports that the machine's CPU use is not measured here.
func machineCPU() (busy, total uint64, ok bool) { return 0, 0, false }

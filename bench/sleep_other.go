//go:build !linux

package bench

import "errors"

// newFineTimer reports that this system has no fine timer: the sleeper
// uses the runtime's timer and its spin.
func newFineTimer() (fineTimer, error) { return nil, errors.New("no fine timer") }

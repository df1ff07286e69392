//go:build !linux

package bench

import "errors"

// newWaker reports that this system has no waker: workers wait on their
// channels.
func newWaker() (waker, error) { return nil, errors.New("no waker") }

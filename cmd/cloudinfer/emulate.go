package main

import "errors"

// emulateCmd is the `cloudinfer emulate` command.
type emulateCmd struct{}

// Run runs the command.
func (c *emulateCmd) Run() error { return errors.New("emulate: not available in this build yet") }

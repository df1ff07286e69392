package main

import "errors"

// benchCmd is the `cloudinfer bench` command.
type benchCmd struct{}

// Run runs the command.
func (c *benchCmd) Run() error { return errors.New("bench: not available in this build yet") }

package main

import "errors"

// reportCmd is the `cloudinfer report` command.
type reportCmd struct{}

// Run runs the command.
func (c *reportCmd) Run() error { return errors.New("report: not available in this build yet") }

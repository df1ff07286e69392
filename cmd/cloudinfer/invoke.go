package main

import "errors"

// invokeCmd is the `cloudinfer invoke` command.
type invokeCmd struct{}

// Run runs the command.
func (c *invokeCmd) Run() error { return errors.New("invoke: not available in this build yet") }

package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/alecthomas/kong"
)

// versionCmd is the `cloudinfer version` command: the build's module
// version, source revision and Go version, as a bug report wants them.
type versionCmd struct{}

// Run runs the command.
func (versionCmd) Run(k *kong.Context) error { return writeVersion(k.Stdout) }

// writeVersion writes one line: "cloudinfer VERSION (REVISION[, modified]
// TIME) GOVERSION". A build without module or VCS information says
// "(devel)" or leaves the revision out.
func writeVersion(w io.Writer) error {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		_, err := fmt.Fprintln(w, "cloudinfer (unknown build)")
		return err
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	line := "cloudinfer " + version
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " (" + rev + modified
		if at != "" {
			line += " " + at
		}
		line += ")"
	}
	_, err := fmt.Fprintln(w, line+" "+bi.GoVersion)
	return err
}

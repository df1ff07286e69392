package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// reportCmd is the `cloudinfer report` command.
type reportCmd struct {
	Files   []string `arg:"" help:"Saved result files (JSON, from cloudinfer bench)." type:"existingfile"`
	Compare bool     `help:"Compare two results (A B) side by side, with deltas B − A."`
	Merge   bool     `help:"Merge results of the same plan run on several machines into one (see --out); run each machine with its own bench --seed."`
	Format  string   `help:"Output: text, markdown, csv, json or html." enum:"text,markdown,csv,json,html" default:"text"`
	Out     string   `help:"Write the output to this file instead of standard output." placeholder:"FILE"`
	Detail  bool     `help:"Add the full per-group latency report to the text output."`
}

// Run runs the command. With --out the output is written only once it is
// rendered: a report that fails leaves no file behind, and one written over
// one of its own inputs reads that input first.
func (c *reportCmd) Run() error {
	if c.Out == "" {
		return c.render(os.Stdout)
	}
	var b bytes.Buffer
	if err := c.render(&b); err != nil {
		return err
	}
	if err := os.WriteFile(c.Out, b.Bytes(), 0o644); err != nil {
		return errcodes.Wrap(err, errcodes.InvalidParam, "report: write "+c.Out+": "+err.Error())
	}
	return nil
}

func (c *reportCmd) render(w io.Writer) error {
	switch {
	case c.Compare && c.Merge:
		return errcodes.New(errcodes.InvalidParam, "report: --compare or --merge, not both")
	case c.Compare && len(c.Files) != 2:
		return errcodes.New(errcodes.InvalidParam, "report: --compare takes two result files, A and B")
	case !c.Compare && !c.Merge && len(c.Files) != 1:
		return errcodes.New(errcodes.InvalidParam, "report: one result file, or --compare A B, or --merge FILE…")
	}
	results := make([]*bench.Result, len(c.Files))
	for i, f := range c.Files {
		r, err := bench.ReadResult(f)
		if err != nil {
			return err
		}
		results[i] = r
	}
	if c.Compare {
		cmp, err := bench.Compare(results[0], results[1], filepath.Base(c.Files[0]), filepath.Base(c.Files[1]))
		if err != nil {
			return err
		}
		if c.Format == "json" {
			return errcodes.New(errcodes.InvalidParam, "report: --compare renders text, markdown, csv or html")
		}
		return cmp.Render(w, bench.Format(c.Format))
	}
	res := results[0]
	if c.Merge {
		m, err := bench.Merge(results...)
		if err != nil {
			return err
		}
		res = m
	}
	return res.Render(w, bench.Format(c.Format), bench.RenderOptions{Detail: c.Detail})
}

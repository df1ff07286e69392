package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// reportCmd is the `cloudinfer report` command.
type reportCmd struct {
	Files   []string `arg:"" help:"Saved result files (JSON, from cloudinfer bench); with --merge, also directories, whose shard-I-of-N.json files (a sharded run's, bench --shards --out DIR) are read." type:"path"`
	Compare bool     `help:"Compare two results (A B) side by side, with deltas B − A; targets are paired by name (or the one target of each)."`
	Merge   bool     `help:"Merge results of the same plan run on several machines into one (--format json --out FILE saves it as a result): a sharded run's shards, all of them (bench --shards), or runs each with its own bench --seed."`
	Format  string   `help:"Output: text, markdown, csv, json (not with --compare) or html." enum:"text,markdown,csv,json,html" default:"text"`
	Out     string   `help:"Write the output to this file instead of standard output." placeholder:"FILE"`
	Detail  bool     `help:"Add the full per-group latency report to the text output (not with --compare)."`

	stderr io.Writer // notes beside the output; nil: standard error
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

// check refuses a command line of the wrong shape: a usage error.
func (c *reportCmd) check() error {
	var msg string
	switch {
	case c.Compare && c.Merge:
		msg = "report: --compare or --merge, not both"
	case c.Compare && len(c.Files) != 2:
		msg = "report: --compare takes two result files, A and B"
	case c.Compare && c.Format == "json":
		msg = "report: --compare renders text, markdown, csv or html, not json"
	case c.Compare && c.Detail:
		msg = "report: --detail adds the per-group report of one result; a comparison (--compare) has none"
	case !c.Compare && !c.Merge && len(c.Files) != 1:
		msg = "report: one result file, or --compare A B, or --merge FILE…"
	default:
		return nil
	}
	return usageError{errcodes.New(errcodes.InvalidParam, msg)}
}

func (c *reportCmd) render(w io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	files, err := c.files()
	if err != nil {
		return err
	}
	results := make([]*bench.Result, len(files))
	for i, f := range files {
		r, err := readResult(f)
		if err != nil {
			return err
		}
		results[i] = r
	}
	if c.Compare {
		nameA, nameB := filepath.Base(c.Files[0]), filepath.Base(c.Files[1])
		if nameA == nameB { // results of one name in two directories
			nameA, nameB = c.Files[0], c.Files[1]
		}
		cmp, err := bench.Compare(results[0], results[1], nameA, nameB)
		if err != nil {
			return reword(err, "bench: ", "report: ")
		}
		if err := cmp.Render(w, bench.Format(c.Format)); err != nil {
			return err
		}
		c.notePaired(results[0], results[1], nameA, nameB)
		return nil
	}
	res := results[0]
	if c.Merge {
		m, err := bench.Merge(results...)
		if err != nil {
			return reword(err, "bench: merge: ", "report: --merge "+strings.Join(c.Files, ", ")+": ")
		}
		res = m
		c.noteShards(m)
	}
	return res.Render(w, bench.Format(c.Format), bench.RenderOptions{Detail: c.Detail})
}

// files returns the result files the command reads: its arguments, with
// (under --merge) a directory's shard-*.json files in their place. A path
// that does not exist, or a directory without --merge, is a usage error.
func (c *reportCmd) files() ([]string, error) {
	var out []string
	for _, f := range c.Files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, usageError{errcodes.Wrap(err, errcodes.InvalidParam, "report: "+err.Error())}
		}
		if !st.IsDir() {
			out = append(out, f)
			continue
		}
		if !c.Merge {
			return nil, usageError{errcodes.Errorf(errcodes.InvalidParam, "report: %s is a directory: only --merge reads a directory (its shard-*.json files)", f)}
		}
		found, err := filepath.Glob(filepath.Join(f, "shard-*.json"))
		if err != nil || len(found) == 0 {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "report: --merge %s: no shard-*.json result files in it (bench --shards N --out %s writes them)", f, f)
		}
		out = append(out, found...) // Glob sorts them
	}
	return out, nil
}

// noteShards tells, on standard error, which shards a merged result holds
// and how far apart their measured runs started.
func (c *reportCmd) noteShards(m *bench.Result) {
	if len(m.Shards) == 0 {
		return
	}
	w := c.stderr
	if w == nil {
		w = os.Stderr
	}
	hash, _ := bench.PlanHash(m.Plan)
	hosts := make([]string, len(m.Shards))
	for i, s := range m.Shards {
		hosts[i] = fmt.Sprintf("%d %s", s.Index, s.Host)
	}
	fmt.Fprintf(w, "report: merged %d shards of plan %s (%s)\n", len(m.Shards), hash, strings.Join(hosts, ", "))
	for _, tr := range m.Targets {
		fmt.Fprintf(w, "report: %s: the shards' measured runs started %v apart\n", tr.Name, tr.StartSpread.D())
	}
}

// notePaired names on standard error the targets a comparison left out:
// those of one result only (targets are paired by name, or the one target
// of each result with the other).
func (c *reportCmd) notePaired(a, b *bench.Result, nameA, nameB string) {
	if len(a.Targets) == 1 && len(b.Targets) == 1 {
		return
	}
	only := func(x, y *bench.Result) []string {
		var out []string
		for _, tx := range x.Targets {
			found := false
			for _, ty := range y.Targets {
				found = found || tx.Name == ty.Name
			}
			if !found {
				out = append(out, tx.Name)
			}
		}
		return out
	}
	w := c.stderr
	if w == nil {
		w = os.Stderr
	}
	for _, side := range []struct {
		name  string
		names []string
	}{{nameA, only(a, b)}, {nameB, only(b, a)}} {
		if len(side.names) > 0 {
			fmt.Fprintf(w, "report: only in %s: %s (not compared; targets are paired by name)\n", side.name, strings.Join(side.names, ", "))
		}
	}
}

// readResult reads a saved result; its errors name the file, and call a
// JSON file without a format version no result rather than a result of
// version 0.
func readResult(path string) (*bench.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errcodes.Wrap(err, errcodes.InvalidParam, "report: "+err.Error())
	}
	if json.Valid(b) {
		var head struct {
			Version *int `json:"version"`
		}
		if json.Unmarshal(b, &head) != nil || head.Version == nil {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "report: %s is not a cloudinfer bench result (it has no format version)", path)
		}
	}
	r, err := bench.ParseResult(b)
	if err != nil {
		return nil, reword(err, "bench: ", "report: "+path+": ")
	}
	return r, nil
}

// reword returns err with head in place of its message's prefix old (or
// before its message, when that has no such prefix).
func reword(err error, old, head string) error {
	var e *errcodes.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("%s%w", head, err)
	}
	c := *e
	c.Message = head + strings.TrimPrefix(e.Message, old)
	return &c
}

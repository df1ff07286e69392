package hooks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/internal/nilerr"
)

// PreValidator checks a request before anything is sent. It must not modify
// req. Its error is final and normalized to ERR_INVALID_PARAM unless it is an
// *errcodes.Error.
type PreValidator interface {
	PreValidate(ctx context.Context, req *cloudreq.CloudRequest) error
}

// PreSerializer may rewrite a request (a copy of the caller's) once, before
// the adapter serializes it. The copy's Payload.Body shares the caller's
// bytes, so that a large body is not copied on every call: to change the
// body, set a new slice (appending to it is safe, its capacity is clipped);
// never write into it. Its error is final, as PreValidator's.
type PreSerializer interface {
	PreSerialize(ctx context.Context, req *cloudreq.CloudRequest) error
}

// PostDeserializer sees each attempt's normalized outcome: resp on success
// (err nil), err on failure (resp nil or partial). It may enrich resp. A
// non-nil return replaces the outcome with that error; returning nil keeps
// the outcome as it is (a PostDeserializer cannot turn a failure into a
// success).
type PostDeserializer interface {
	PostDeserialize(ctx context.Context, req *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error
}

// PreValidateFunc adapts a function to PreValidator.
type PreValidateFunc func(ctx context.Context, req *cloudreq.CloudRequest) error

// PreValidate calls f.
func (f PreValidateFunc) PreValidate(ctx context.Context, req *cloudreq.CloudRequest) error {
	return f(ctx, req)
}

// PreSerializeFunc adapts a function to PreSerializer.
type PreSerializeFunc func(ctx context.Context, req *cloudreq.CloudRequest) error

// PreSerialize calls f.
func (f PreSerializeFunc) PreSerialize(ctx context.Context, req *cloudreq.CloudRequest) error {
	return f(ctx, req)
}

// PostDeserializeFunc adapts a function to PostDeserializer.
type PostDeserializeFunc func(ctx context.Context, req *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error

// PostDeserialize calls f.
func (f PostDeserializeFunc) PostDeserialize(ctx context.Context, req *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
	return f(ctx, req, resp, err)
}

// Chain is an ordered list of named hooks of one phase. It is safe for
// concurrent use: a change made while calls are running applies to the calls
// that start after it.
type Chain[H any] struct {
	mu      sync.Mutex // serializes changes; calls read entries without it
	entries atomic.Pointer[[]entry[H]]
}

type entry[H any] struct {
	name string
	h    H
}

// Add appends h under name. Names are unique within a chain.
func (c *Chain[H]) Add(name string, h H) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.indexLocked(name) >= 0 {
		return fmt.Errorf("hooks: %q is already in the chain", name)
	}
	c.set(append(slices.Clip(c.snapshot()), entry[H]{name, h}))
	return nil
}

// InsertBefore adds h under name just before the entry named anchor.
func (c *Chain[H]) InsertBefore(anchor, name string, h H) error { return c.insert(anchor, name, h, 0) }

// InsertAfter adds h under name just after the entry named anchor.
func (c *Chain[H]) InsertAfter(anchor, name string, h H) error { return c.insert(anchor, name, h, 1) }

func (c *Chain[H]) insert(anchor, name string, h H, off int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.indexLocked(name) >= 0 {
		return fmt.Errorf("hooks: %q is already in the chain", name)
	}
	i := c.indexLocked(anchor)
	if i < 0 {
		return fmt.Errorf("hooks: no %q in the chain", anchor)
	}
	c.set(slices.Insert(slices.Clone(c.snapshot()), i+off, entry[H]{name, h}))
	return nil
}

// Remove deletes the entry named name and reports whether it was there.
func (c *Chain[H]) Remove(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.indexLocked(name)
	if i < 0 {
		return false
	}
	c.set(slices.Delete(slices.Clone(c.snapshot()), i, i+1))
	return true
}

// Names lists the entries' names in run order.
func (c *Chain[H]) Names() []string {
	entries := c.snapshot()
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.name
	}
	return out
}

// Len returns the number of entries.
func (c *Chain[H]) Len() int { return len(c.snapshot()) }

func (c *Chain[H]) indexLocked(name string) int {
	return slices.IndexFunc(c.snapshot(), func(e entry[H]) bool { return e.name == name })
}

// snapshot returns the entries to run. Every change replaces the slice, so
// the snapshot never changes under a running call.
func (c *Chain[H]) snapshot() []entry[H] {
	if p := c.entries.Load(); p != nil {
		return *p
	}
	return nil
}

// set publishes entries, a slice no snapshot shares; c.mu is held.
func (c *Chain[H]) set(entries []entry[H]) { c.entries.Store(&entries) }

// Set holds one chain per phase and implements cloudreq.Hooks. The zero Set
// is empty and usable; a nil *Set runs no hooks.
type Set struct {
	// Validate is the PreValidate chain.
	Validate Chain[PreValidator]
	// Serialize is the PreSerialize chain.
	Serialize Chain[PreSerializer]
	// Deserialize is the PostDeserialize chain.
	Deserialize Chain[PostDeserializer]
}

var _ cloudreq.Hooks = (*Set)(nil)

// PreValidate runs the PreValidate chain in order and stops at the first
// error, naming the hook that refused.
func (s *Set) PreValidate(ctx context.Context, req *cloudreq.CloudRequest) error {
	if s == nil {
		return nil
	}
	for _, e := range s.Validate.snapshot() {
		if err := e.h.PreValidate(ctx, req); err != nil && !nilerr.Is(err) {
			return named(e.name, err)
		}
	}
	return nil
}

// PreSerialize runs the PreSerialize chain in order and stops at the first error.
func (s *Set) PreSerialize(ctx context.Context, req *cloudreq.CloudRequest) error {
	if s == nil {
		return nil
	}
	for _, e := range s.Serialize.snapshot() {
		if err := e.h.PreSerialize(ctx, req); err != nil && !nilerr.Is(err) {
			return named(e.name, err)
		}
	}
	return nil
}

// PostDeserialize runs the PostDeserialize chain in order. Each hook sees the
// outcome the previous ones left: a veto replaces err for the hooks after
// it, which still run (so a logging hook at the end of the chain sees a
// vetoed attempt), and the last veto is the chain's.
func (s *Set) PostDeserialize(ctx context.Context, req *cloudreq.CloudRequest, resp *cloudreq.CloudResponse, err error) error {
	if s == nil {
		return nil
	}
	var veto error
	for _, e := range s.Deserialize.snapshot() {
		if verr := e.h.PostDeserialize(ctx, req, resp, err); verr != nil && !nilerr.Is(verr) {
			veto, err = verr, verr
		}
	}
	return veto
}

// named prefixes the hook's name to its error's message, keeping the code
// (ERR_INVALID_PARAM when it has none). The hook's error is never written
// to — it may be a shared variable — but wrapped, so that errors.Is(err,
// hookErr) still holds.
func named(name string, err error) error {
	e := errcodes.From(err)
	c := *e
	if c.Err != err {
		c.Err = err
	}
	if c.Code == errcodes.Unknown {
		c.Code = errcodes.InvalidParam
		c.Retryable = false
	}
	c.Message = "hook " + name + ": " + e.Message
	return &c
}

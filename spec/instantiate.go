package spec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
)

// Instantiate builds the capabilities of s with the factories of reg (nil
// means capabilities.Default()), as setup says: relative paths in options
// resolve against setup.Dir, and the spec's own file is added to the files
// no capability may change (decision D11). A factory's error is a spec
// problem: it is reported at the entry's position, or at the option's for a
// *capabilities.ArgError, and every entry's problems are returned together,
// as an Errors. Once all are built, each capabilities.Peered is shown them
// all. When any capability fails, those already built are closed.
func Instantiate(ctx context.Context, s *Spec, reg *capabilities.Registry, setup capabilities.Setup) ([]capabilities.Capability, error) {
	if s == nil {
		return nil, errors.New("spec: nil spec")
	}
	if reg == nil {
		reg = capabilities.Default()
	}
	if abs := s.absPath(); abs != "" {
		setup.Protected = setup.Protected.With(abs)
	}
	// The capabilities are built in the run's workspace, which an entry
	// such as LocalWorkspace may set.
	given := setup
	ws, err := RunWorkspace(ctx, s, reg, given)
	if err != nil {
		return nil, err
	}
	setup.Dir, setup.ReadOnly, setup.Env = ws.Dir, ws.ReadOnly, ws.Env
	var (
		built []capabilities.Capability
		errs  Errors
	)
	for _, c := range s.Capabilities {
		if err := ctx.Err(); err != nil {
			_ = capabilities.CloseAll(built) // the run is over before it began; nothing to report to
			return nil, err
		}
		at := setup
		if t, ok := reg.Lookup(c.Name); ok && t.SetsWorkspace {
			at = given // it names the workspace relative to the one given
		}
		capability, err := reg.New(ctx, c.Name, capabilities.Args{Options: c.Options, Setup: at})
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
				_ = capabilities.CloseAll(built) // the run is over before it began; nothing to report to
				return nil, err
			}
			errs = append(errs, factoryError(s, c, err))
			continue
		}
		built = append(built, capability)
	}
	if len(errs) == 0 {
		for i, c := range built {
			if p, ok := capabilities.As[capabilities.Peered](c); ok {
				if err := p.Peers(built); err != nil {
					errs = append(errs, factoryError(s, s.Capabilities[i], err))
				}
			}
		}
	}
	if len(errs) > 0 {
		_ = capabilities.CloseAll(built) // the run is over before it began; nothing to report to
		return nil, sortErrors(errs)
	}
	return built, nil
}

// absFileMu guards every Spec's absFile.
var absFileMu sync.Mutex

// absPath is s.File made absolute, looked up once per spec; "" when s has no
// file or the working directory cannot be had.
func (s *Spec) absPath() string {
	if s.File == "" {
		return ""
	}
	absFileMu.Lock()
	defer absFileMu.Unlock()
	if s.absOf != s.File || s.absFile == "" {
		abs, err := filepath.Abs(s.File)
		if err != nil {
			return ""
		}
		s.absFile, s.absOf = abs, s.File
	}
	return s.absFile
}

// factoryError places a factory's error in the spec.
func factoryError(s *Spec, c Capability, err error) *Error {
	var (
		argErr  *capabilities.ArgError
		unknown *capabilities.UnknownTypeError
	)
	optsPtr := c.Pointer
	if errors.As(err, &argErr) {
		optsPtr = s.nestedOptions(c.Pointer, c.Options, err)
	}
	switch {
	case errors.As(err, &argErr):
		ptr := child(optsPtr, argErr.Option)
		if _, written := s.positions[ptr]; !written && s.positions != nil {
			// An option the entry needs and does not write: the error is
			// the options' (or the entry's, with none), where they are.
			ptr = optsPtr
		}
		return &Error{Pos: s.Position(ptr), Msg: prefixed(ptr, argErr.Msg)}
	case errors.As(err, &unknown):
		return &Error{Pos: c.Pos, Msg: prefixed(entryPointer(c), unknownTypeMsg(unknown.Name, unknown.Valid))}
	}
	return &Error{Pos: c.Pos, Msg: prefixed(entryPointer(c), fmt.Sprintf("could not set up %s: %v", c.Name, err))}
}

// nestedOptions returns the pointer of the options an *ArgError in err is
// about: optsPtr, that of the options written for the entry whose factory
// returned err, or, when err came from a nested entry's factory (a
// *capabilities.NestedError), that of the nested entry's options, followed
// down as far as the entries nest. options are the entry's, as its factory
// got them, in which the nested entry is found.
func (s *Spec) nestedOptions(optsPtr string, options json.RawMessage, err error) string {
	for {
		var ne *capabilities.NestedError
		if !errors.As(err, &ne) {
			return optsPtr
		}
		var opts map[string]json.RawMessage
		if json.Unmarshal(options, &opts) != nil {
			return optsPtr
		}
		found := false
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			var n capabilities.Nested
			if json.Unmarshal(opts[k], &n) != nil || n.Name != ne.Nested.Name || !sameJSON(n.Options, ne.Nested.Options) {
				continue
			}
			next, ok := s.nested[child(optsPtr, k)]
			if !ok {
				return optsPtr
			}
			optsPtr, options, err, found = next, ne.Nested.Options, ne.Err, true
			break
		}
		if !found {
			return optsPtr
		}
	}
}

// sameJSON tells whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// entryPointer returns the pointer of the capabilities entry c came from:
// the first two tokens of its options pointer ("/capabilities/0").
func entryPointer(c Capability) string {
	toks := tokens(c.Pointer)
	if len(toks) < 2 {
		return c.Pointer
	}
	return "/" + strings.Join(toks[:2], "/")
}

// CapabilityWarnings are the warnings of the capabilities Instantiate
// built for s (capabilities.Warner, through any wrapper), in order, worded
// as the loader's warnings are: one a capabilities.OptionWarner says of an
// option the entry writes is at that option's value
// ("warning: capabilities[0].FileSystem.cwd: ..."), in the entry or in one
// nested in it (PrefixTools' capability); any other at the entry's
// position ("warning: capabilities[0]: ...").
func CapabilityWarnings(s *Spec, caps []capabilities.Capability) Errors {
	var out Errors
	for i, c := range caps {
		if i >= len(s.Capabilities) {
			break
		}
		// The first Warner of the chain is heard, as before OptionWarner
		// came, and it places its warnings only if it is an OptionWarner
		// itself: a wrapper with Warnings of its own says them in place of
		// those of what it wraps.
		var warnings []capabilities.Warning
		if w, ok := capabilities.As[capabilities.Warner](c); ok {
			if ow, ok := w.(capabilities.OptionWarner); ok {
				warnings = ow.OptionWarnings()
			} else {
				for _, msg := range w.Warnings() {
					warnings = append(warnings, capabilities.Warning{Msg: msg})
				}
			}
		}
		entry := s.Capabilities[i]
		for _, w := range warnings {
			pos, ptr := entry.Pos, entryPointer(entry)
			if at, ok := s.optionPointer(entry.Pointer, []string{w.Option}, s.positions, 0); ok && w.Option != "" {
				pos, ptr = s.Position(at), at
			}
			out = append(out, &Error{Pos: pos, Msg: "warning: " + prefixed(ptr, w.Msg)})
		}
	}
	return out
}

// OptionPosition returns where the spec writes the option at path (the
// keys from the options of c down: "kind", or "tool", "kind") in the entry
// of c, or else in an entry nested in its options (PrefixTools'
// capability), the outer ones first: the option's key with key set, its
// value otherwise. ok is false when no entry writes it, and for a Spec
// built in Go, which has no positions.
func (s *Spec) OptionPosition(c Capability, key bool, path ...string) (pos Position, ok bool) {
	written := s.positions
	if key {
		written = s.keys
	}
	ptr, ok := s.optionPointer(c.Pointer, path, written, 0)
	if !ok {
		return Position{}, false
	}
	return written[ptr], true
}

// optionPointer returns the pointer of the option at path where written
// (the positions of values, or of keys) has it: among the options at
// optsPtr, or else among those of an entry nested in them (PrefixTools'
// capability), the outer ones first. depth counts the entries gone into;
// false when none writes the option.
func (s *Spec) optionPointer(optsPtr string, path []string, written map[string]Position, depth int) (string, bool) {
	if ptr := pointer(optsPtr, path); written[ptr] != (Position{}) {
		return ptr, true
	}
	if depth > maxDepth {
		return "", false
	}
	for _, entry := range slices.Sorted(maps.Keys(s.nested)) {
		if parent(entry) != optsPtr {
			continue
		}
		if ptr, ok := s.optionPointer(s.nested[entry], path, written, depth+1); ok {
			return ptr, true
		}
	}
	return "", false
}

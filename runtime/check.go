package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// Check finds what Run would refuse before its first model request, without
// making one: a missing model, a script model's file that is missing or
// invalid, settings the provider cannot take, an invalid output schema or
// workspace check, capabilities that cannot be built in the workspace
// (WithWorkspace), two capabilities offering tools of the same name, and
// tools offered to a model that cannot call any (providers.CheckTools).
// With WithVars, the instructions' placeholders must all have values, and
// every value a placeholder (CheckVars); without it, a capability whose
// options use a placeholder is not built (spec.WithoutTemplatedCapabilities).
// When an entry sets the workspace to a directory that does not exist yet,
// which a check allows, no other capability is built, and a
// CapabilityWarning at the entry says so (spec.WorkspaceToCome).
// Problems in a spec loaded from a file are spec.Errors, at their positions.
//
// The capabilities are built (Setup.CheckOnly: no server is
// started or reached) and asked for their tools, then closed; those that
// implement capabilities.Remote (their tools live behind the network) are
// built but not asked.
func Check(ctx context.Context, s *spec.Spec, opts ...Option) error {
	if s == nil {
		return errors.New("runtime: nil spec")
	}
	cfg := newConfig(opts)
	if cfg.vars != nil {
		if err := CheckVars(s, cfg.vars); err != nil {
			return err
		}
		// Built as a run builds them, with their arguments filled.
		filled, err := s.WithCapabilityVars(cfg.vars)
		if err != nil {
			return err
		}
		s = filled
	} else {
		// A capability whose options use a placeholder is built when its
		// values are known (run --var, a pipeline's job), not here.
		s = s.WithoutTemplatedCapabilities()
	}
	if _, err := compileOutputSchema(s.OutputSchema); err != nil {
		return err
	}
	if _, err := compileChecks(s); err != nil {
		return err
	}
	model, err := newModelSource(s, cfg)
	if err != nil {
		return err
	}
	workspace, err := filepath.Abs(cfg.workspace)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	setup := capabilities.Setup{Dir: workspace, CheckOnly: true, Transport: cfg.transport}
	if w, err := spec.WorkspaceToCome(ctx, s, cfg.registry, setup); err != nil || w != nil {
		if w != nil {
			err = emitTo(ctx, cfg.listeners, CapabilityWarning{File: w.Pos.File, Line: w.Pos.Line, Column: w.Pos.Col, Message: w.Msg})
		}
		return err
	}
	owned, err := spec.Instantiate(ctx, s, cfg.registry, setup)
	if err != nil {
		return err
	}
	if err := emitCapabilityWarnings(ctx, cfg.listeners, s, owned); err != nil {
		return errors.Join(err, closeAll(owned))
	}
	local := make([]capabilities.Capability, 0, len(owned))
	for _, c := range owned {
		if r, ok := capabilities.As[capabilities.Remote](c); ok && r.Remote() {
			local = append(local, nil) // keeps the indexes of s.Capabilities
			continue
		}
		local = append(local, c)
	}
	ts, err := newToolset(ctx, slices.Concat(local, cfg.extra))
	if err == nil {
		err = model.checkTools(s, len(owned), ts)
	}
	err = errors.Join(collisionErrors(s, len(owned), err), closeAll(owned))
	return err
}

// checkTools refuses the tools of ts for a model that cannot call any
// (providers.CheckTools), as a spec error at the first of the spec's
// capabilities (indexes below n) that offers some, since the provider
// would refuse the first request. A model given with WithModel is not
// checked.
func (m *modelSource) checkTools(s *spec.Spec, n int, ts *toolset) error {
	if m.given != nil || ts.first < 0 {
		return nil
	}
	err := providers.CheckTools(m.ref)
	if err == nil {
		return nil
	}
	if ts.first >= n || s.File == "" {
		return err
	}
	c := s.Capabilities[ts.first]
	msg := err.Error()
	if tu, ok := errors.AsType[*providers.ToolUseError](err); ok {
		msg = fmt.Sprintf("which %s cannot call: %s", tu.Ref, tu.Reason())
	}
	return spec.Errors{{Pos: c.Pos, Msg: fmt.Sprintf("capabilities[%d]: %s offers tools, %s", ts.first, c.Name, msg)}}
}

// toolCollision is two capabilities offering a tool of the same name.
type toolCollision struct {
	first, second int      // indexes of the capabilities
	names         []string // the tool names both offer
}

func (c *toolCollision) Error() string {
	if len(c.names) == 1 {
		return fmt.Sprintf("two capabilities provide a tool named %q", c.names[0])
	}
	return fmt.Sprintf("two capabilities provide tools named %s", strings.Join(quoteAll(c.names), ", "))
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// collisionErrors turns a *toolCollision between capabilities of the spec
// (indexes below n) into a spec error at the second one's entry, naming the
// first one's; other errors pass unchanged.
func collisionErrors(s *spec.Spec, n int, err error) error {
	var tc *toolCollision
	if !errors.As(err, &tc) || tc.second >= n || s.File == "" {
		return err
	}
	first, second := s.Capabilities[tc.first], s.Capabilities[tc.second]
	noun := "a tool"
	if len(tc.names) > 1 {
		noun = "tools"
	}
	msg := fmt.Sprintf("capabilities[%d]: %s offers %s named %s, as %s at %s (capabilities[%d]) does; "+
		"tool names must be unique: wrap one of them in PrefixTools (- PrefixTools: {prefix: NAME, capability: {%s: ...}})",
		tc.second, second.Name, noun, strings.Join(quoteAll(tc.names), ", "), first.Name, first.Pos, tc.first, second.Name)
	return spec.Errors{{Pos: second.Pos, Msg: msg}}
}

package spec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/agentspec/agentspec/capabilities"
)

// RunWorkspace is the workspace a run of s works in: the directory setup
// gives, or the one an entry of a type that sets the workspace
// (LocalWorkspace) names, resolved against it, with that entry's read_only
// and env. Instantiate builds the other capabilities there; a runtime asks
// first, for the directory its cache and checks look at.
func RunWorkspace(ctx context.Context, s *Spec, reg *capabilities.Registry, setup capabilities.Setup) (capabilities.Workspace, error) {
	ws, _, err := runWorkspace(ctx, s, reg, setup)
	return ws, err
}

// WorkspaceToCome is, for a check (setup.CheckOnly, which lets the
// directory an entry names come later), a warning at that entry when its
// directory does not exist yet: the capabilities that work in it can only
// be built once it does. It is nil when no entry sets the workspace or its
// directory is there. A file where the directory should be is an error at
// the entry, as a run would refuse it: it will not become a directory.
func WorkspaceToCome(ctx context.Context, s *Spec, reg *capabilities.Registry, setup capabilities.Setup) (*Error, error) {
	ws, entry, err := runWorkspace(ctx, s, reg, setup)
	if err != nil || entry == nil {
		return nil, err
	}
	st, err := os.Stat(ws.Dir)
	if err == nil && !st.IsDir() {
		return nil, Errors{{Pos: entry.Pos, Msg: prefixed(entry.Pointer, fmt.Sprintf(
			"%s is not a directory: the run's workspace must be one", ws.Dir))}}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return &Error{Pos: entry.Pos, Msg: "warning: " + prefixed(entry.Pointer, fmt.Sprintf(
		"%s does not exist yet: the other capabilities work in it, and are built and checked only once it does", ws.Dir))}, nil
}

// runWorkspace is RunWorkspace, and the entry that set the workspace (nil
// for setup's).
func runWorkspace(ctx context.Context, s *Spec, reg *capabilities.Registry, setup capabilities.Setup) (capabilities.Workspace, *Capability, error) {
	ws := capabilities.Workspace{Dir: setup.Dir, ReadOnly: setup.ReadOnly, Env: setup.Env}
	if reg == nil {
		reg = capabilities.Default()
	}
	for _, c := range s.Capabilities {
		t, ok := reg.Lookup(c.Name)
		if !ok || !t.SetsWorkspace {
			continue
		}
		built, err := reg.New(ctx, c.Name, capabilities.Args{Options: c.Options, Setup: setup})
		if err != nil {
			return ws, nil, factoryError(s, c, err)
		}
		setter, ok := capabilities.As[capabilities.WorkspaceSetter](built)
		_ = capabilities.CloseAll([]capabilities.Capability{built}) // asked for its workspace only
		if !ok {
			return ws, nil, Errors{{Pos: c.Pos, Msg: fmt.Sprintf("%s sets the run's workspace but does not say which (capabilities.WorkspaceSetter)", c.Name)}}
		}
		return setter.Workspace(), &c, nil
	}
	return ws, nil, nil
}

package spec

import (
	"context"
	"fmt"

	"github.com/agentspec/agentspec/capabilities"
)

// RunWorkspace is the workspace a run of s works in: the directory setup
// gives, or the one an entry of a type that sets the workspace
// (LocalWorkspace) names, resolved against it, with that entry's read_only
// and env. Instantiate builds the other capabilities there; a runtime asks
// first, for the directory its cache and checks look at.
func RunWorkspace(ctx context.Context, s *Spec, reg *capabilities.Registry, setup capabilities.Setup) (capabilities.Workspace, error) {
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
			return ws, factoryError(s, c, err)
		}
		setter, ok := capabilities.As[capabilities.WorkspaceSetter](built)
		closeAll([]capabilities.Capability{built})
		if !ok {
			return ws, Errors{{Pos: c.Pos, Msg: fmt.Sprintf("%s sets the run's workspace but does not say which (capabilities.WorkspaceSetter)", c.Name)}}
		}
		return setter.Workspace(), nil
	}
	return ws, nil
}

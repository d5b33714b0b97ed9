// Package localworkspace is the LocalWorkspace capability, pydantic-ai's way
// of giving a run its workspace in the spec: `LocalWorkspace: DIR` makes DIR
// the run's workspace, exactly as `agentspec run --workspace DIR` does, so
// FileSystem roots and Shell commands resolve inside it. `read_only: true`
// narrows every capability to what only reads, and `env` goes to every
// command started there.
package localworkspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/argmax"
)

// TypeName is the capability's name in specs.
const TypeName = "LocalWorkspace"

const optionsSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["working_dir"],
  "properties": {
    "working_dir": {"type": "string", "minLength": 1, "description": "The run's workspace. A relative path resolves against the workspace the run was given (--workspace, else the current directory); ~ is the home directory. It must exist."},
    "read_only": {"type": "boolean", "description": "Only what reads: FileSystem keeps its read tools, Shell offers none."},
    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Variables every command started in the workspace gets."},
    "id": {"type": "string", "description": "Identifies the entry (default local_workspace)."},
    "description": {"type": "string"},
    "defer_loading": {"type": "boolean", "description": "Not for LocalWorkspace: the workspace is the run's from its start."}
  }
}`

// Type is the LocalWorkspace capability type, for a program to register
// (capabilities/builtin lists it with the other built-in types).
func Type() capabilities.Type {
	return capabilities.Type{
		Name:          TypeName,
		Description:   "Sets the run's workspace, as --workspace does: `LocalWorkspace: DIR`; read_only narrows every capability to reading.",
		Schema:        json.RawMessage(optionsSchema),
		Positional:    "working_dir",
		SetsWorkspace: true,
		New:           newCapability,
	}
}

// Options are LocalWorkspace's options.
type Options struct {
	WorkingDir   string            `json:"working_dir"`
	ReadOnly     bool              `json:"read_only"`
	Env          map[string]string `json:"env"`
	ID           string            `json:"id"`
	Description  string            `json:"description"`
	DeferLoading bool              `json:"defer_loading"`
}

// Capability is a LocalWorkspace: it offers no tools, and sets the run's
// workspace (capabilities.WorkspaceSetter).
type Capability struct {
	ws capabilities.Workspace
}

// Tools returns none: the workspace is what the other capabilities work in.
func (c *Capability) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }

// Workspace is the workspace the entry sets.
func (c *Capability) Workspace() capabilities.Workspace { return c.ws }

// Reach is the workspace directory, written unless read_only: the run's
// cache and checks read it, and its capabilities work in it, so a host that
// confines runs to a directory (a queue worker) must see where it leads.
func (c *Capability) Reach() capabilities.Reach {
	dir := c.ws.Dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // a link that leads elsewhere is judged by where it leads
	}
	return capabilities.Reach{Paths: []capabilities.PathReach{{Path: dir, Write: !c.ws.ReadOnly}}}
}

func newCapability(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
	var o Options
	if err := json.Unmarshal(args.Options, &o); err != nil {
		return nil, err
	}
	if o.DeferLoading {
		return nil, capabilities.ArgErrorf("defer_loading", "LocalWorkspace cannot be loaded later: the workspace is the run's from its start")
	}
	dir, err := Resolve(o.WorkingDir, args.Dir, !args.CheckOnly)
	if err != nil {
		return nil, capabilities.ArgErrorf("working_dir", "%v", err)
	}
	if err := capabilities.CheckEnv(o.Env); err != nil {
		return nil, err
	}
	// Every process started in the workspace gets it: one too large for
	// any, alone, is refused here; Shell and MCP count the rest.
	if err := capabilities.CheckEnvSize(argmax.Size("", nil, capabilities.EnvStrings(o.Env))); err != nil {
		return nil, err
	}
	env := make(map[string]string, len(o.Env))
	maps.Copy(env, o.Env)
	return &Capability{ws: capabilities.Workspace{Dir: dir, ReadOnly: o.ReadOnly, Env: env}}, nil
}

// Resolve is the directory working_dir names: ~ and ~NAME expanded, a
// relative path joined to base (the workspace the run was given), made
// absolute and clean. With exist, the directory must exist: a run starts
// in it, while a spec checked before its run names a directory that may
// come later.
func Resolve(workingDir, base string, exist bool) (string, error) {
	dir := workingDir
	if rest, ok := strings.CutPrefix(dir, "~"); ok {
		// ~ is this user's home, ~NAME/ NAME's, as Python's expanduser
		// reads them.
		name, below, _ := strings.Cut(rest, "/")
		var home string
		if name == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("working_dir %s: no home directory to expand ~ to: %v", workingDir, err)
			}
			home = h
		} else {
			u, err := user.Lookup(name)
			if err != nil || u.HomeDir == "" {
				return "", fmt.Errorf("working_dir %s: no home directory for the user %s", workingDir, name)
			}
			home = u.HomeDir
		}
		dir = filepath.Join(home, below)
	}
	if !filepath.IsAbs(dir) {
		if base == "" {
			base = "."
		}
		dir = filepath.Join(base, dir)
	}
	dir, err := filepath.Abs(dir)
	if err != nil || !exist {
		return dir, err
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("local workspace directory %s does not exist", dir)
	case err != nil:
		return "", fmt.Errorf("local workspace directory %s: %v", dir, err)
	case !st.IsDir():
		return "", fmt.Errorf("local workspace directory %s is not a directory", dir)
	}
	return dir, nil
}

package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// Allow is what a worker lets a job's spec reach beyond its own workspace.
// The zero value allows nothing of it: whoever may submit a job chooses the
// spec, so a spec is trusted no further than this.
type Allow struct {
	// Exec lets capabilities start programs the spec names (an MCP server's
	// command).
	Exec bool
	// Network lets capabilities connect where the spec or the model says
	// (an MCP server's url, WebFetch's local tool), and the spec send the
	// model's requests to an endpoint of its own (model_settings base_url),
	// or to a local provider's default port the worker's environment does
	// not name (ollama:, litellm:), with headers of its own (extra_headers).
	Network bool
	// Env lets the spec read the worker's environment through ${VAR}
	// references, and, with Network, send its model requests to a
	// base_url of its own, which the worker's credentials for the
	// provider go to.
	Env bool
}

// flagFor names the `agentspec worker` flag that allows each kind of reach.
const (
	flagExec    = "--allow-exec"
	flagNetwork = "--allow-network"
	flagEnv     = "--allow-env"
)

// confine checks that a job's spec reaches nothing outside what the worker
// allows: its script file lies beside the spec, and each of its
// capabilities, nested ones included, says what it reaches (built to be
// checked, so nothing is started or connected to), which must be paths in
// the job's workspace (a real path), symbolic links followed, and programs
// or endpoints only as allow permits. A capability that does not say what
// it reaches is refused: nothing bounds it.
func (w *Worker) confine(ctx context.Context, s *spec.Spec, workspace string) error {
	if name, ok := strings.CutPrefix(strings.TrimSpace(s.Model), "script:"); ok {
		if _, err := bundlePath(name); err != nil {
			return fmt.Errorf("the spec's script file %s: %w", name, err)
		}
	}
	allow := w.opts.Allow
	if s.ModelSettings.BaseURL != "" && allow.Network && !allow.Env {
		// The provider's key (or token, or signature) from the worker's
		// environment goes with every request, to whoever the spec chose:
		// as good as reading it through ${VAR}.
		return fmt.Errorf("the spec sends its model requests, with this worker's credentials for its provider, to a base_url of its own; "+
			"this worker was not started with %s", flagEnv)
	}
	if !allow.Network {
		if s.ModelSettings.BaseURL != "" {
			return fmt.Errorf("the spec sends its model requests to a base_url of its own; this worker was not started with %s", flagNetwork)
		}
		if len(s.ModelSettings.ExtraHeaders) > 0 {
			return fmt.Errorf("the spec adds extra_headers to its model requests; this worker was not started with %s", flagNetwork)
		}
		// A provider served locally by default (ollama, litellm) would send
		// the job's requests to a port of this machine the worker's
		// environment never named: one its operator did not choose.
		if at, vars, ok := providers.LocalDefault(s.Model, os.Getenv); ok {
			return fmt.Errorf("the spec's model %s is served at %s by default, which this worker's environment does not name (%s); "+
				"this worker was not started with %s", s.Model, at, strings.Join(vars, ", "), flagNetwork)
		}
	}
	caps, err := spec.Instantiate(ctx, s, w.opts.Registry, capabilities.Setup{Dir: workspace, CheckOnly: true})
	if err != nil {
		return err
	}
	defer capabilities.CloseAll(caps) // built to be asked; nothing to report
	return w.confineCapabilities(s, caps, workspace)
}

// confineCapabilities checks what each of caps, built from s, reaches. The
// run asks it again of the capabilities it built (runtime.WithCapabilityCheck)
// before it uses them, since it resolves their paths anew: a workspace
// directory replaced in between by a symbolic link that leads out, by
// someone else who can write to the workspace, is judged as the run will
// use it.
func (w *Worker) confineCapabilities(s *spec.Spec, caps []capabilities.Capability, workspace string) error {
	allow := w.opts.Allow
	for i, c := range caps {
		name := s.Capabilities[i].Name
		reach, ok := capabilities.ReachOf(c)
		if !ok {
			return fmt.Errorf("capability %s does not say what it reaches (capabilities.Reacher), so a worker does not run it", name)
		}
		if err := allowed(name, reach, allow, workspace); err != nil {
			return err
		}
	}
	return nil
}

// allowed checks one capability's reach.
func allowed(name string, r capabilities.Reach, allow Allow, workspace string) error {
	if len(r.Processes) > 0 && !allow.Exec {
		return fmt.Errorf("%s starts %s; this worker was not started with %s", name, program(r.Processes[0]), flagExec)
	}
	if len(r.Network) > 0 && !allow.Network {
		return fmt.Errorf("%s connects to %s; this worker was not started with %s", name, endpoint(r.Network[0]), flagNetwork)
	}
	if len(r.Env) > 0 && !allow.Env {
		return fmt.Errorf("%s reads the worker's environment (%s); this worker was not started with %s", name, r.Env[0], flagEnv)
	}
	// A path is judged as it resolves now: its symbolic links followed, or,
	// when it does not exist yet, as written, made absolute and clean, so
	// that "link/../x" counts as x whatever link leads to. The built-in
	// capabilities agree at run time: FileSystem and Shell say the real path
	// of a directory they resolved (they are not built without one), and
	// LocalWorkspace, whose directory alone may come later, joins working_dir
	// to the workspace as written, cleaned the same way, both here and in
	// the run, which needs the directory to exist. A capability of another
	// type is judged by the path it says, however it reaches it later.
	for _, p := range r.Paths {
		real, err := filepath.EvalSymlinks(p.Path)
		if errors.Is(err, os.ErrNotExist) {
			real, err = filepath.Abs(p.Path)
		}
		if err != nil || !within(workspace, real) {
			return &outsideError{capability: name, path: p.Path}
		}
	}
	return nil
}

// outsideError is a capability that reaches path, outside the job's
// workspace.
type outsideError struct {
	capability, path string
}

func (e *outsideError) Error() string {
	return fmt.Sprintf("%s reaches %s, outside the job's workspace", e.capability, e.path)
}

// program is how a refusal names a program: its base name, arguments left
// out since they may hold secrets.
func program(p string) string {
	if p == capabilities.Anywhere {
		return "programs the model chooses"
	}
	return filepath.Base(p)
}

func endpoint(e string) string {
	if e == capabilities.Anywhere {
		return "addresses the model chooses"
	}
	return e
}

// within reports whether path (absolute, clean) is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

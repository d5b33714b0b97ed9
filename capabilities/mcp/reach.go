package mcp

import (
	"net/url"
	"path/filepath"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/redact"
)

// Reach is what the server reaches from this machine: the program a local
// server is started with and the directory it runs in (its cwd, the
// workspace when none is given), which it may change as any program
// started there may; or the endpoint of a remote one. A local server
// inherits only inheritedEnv of agentspec's environment, a set the spec
// does not choose, so no Env is named. What the server itself then does
// is beyond agentspec's sight, which is why a boundary that must keep it
// (a queue worker) refuses the program or the endpoint unless allowed, and
// the directory unless it lies within what it allows.
func (c *Capability) Reach() capabilities.Reach { return c.reach }

// reachOf is the reach of a server given opts; endpoint is the URL a remote
// one is reached at, dir the directory a local one runs in (see
// serverDir), judged by where it leads when it is a symbolic link.
func reachOf(opts Options, endpoint, dir string) capabilities.Reach {
	if len(opts.Command) > 0 {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		return capabilities.Reach{
			Processes: []string{opts.Command[0]},
			Paths:     []capabilities.PathReach{{Path: dir, Write: true}},
		}
	}
	return capabilities.Reach{Network: []string{endpointOf(endpoint)}}
}

// endpointOf is a URL without its credentials, query and fragment, and
// with "…" for a path segment that may be a token (see redact.Word): where
// it leads, and nothing secret a spec may have put in it.
func endpointOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	p, _ := redact.Path(u)
	u.User, u.Opaque, u.Path, u.RawPath, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", "", "", "", false, "", ""
	return u.String() + p
}

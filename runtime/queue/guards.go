package queue

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/githooks"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/spec"
)

// pathGuards are what a spec's capabilities say of one workspace's files:
// which the model is never shown (secret) and which it may never change
// (protected). The submitter ships no secret file and takes back no change
// to a secret or protected one. It asks the capabilities themselves, built
// over the workspace to be checked (capabilities.PathGuard, through any
// wrapper such as PrefixTools); a path none of them covers is judged by a
// FileSystem with its default options over the whole workspace, since some
// other capability could still reach it.
type pathGuards struct {
	dir      string // the workspace, a real path
	hooks    *githooks.Dirs
	caps     []capabilities.Capability
	guards   []capabilities.PathGuard
	fallback capabilities.PathGuard
}

// newPathGuards builds s's capabilities over dir to ask them. protected
// are the spec's own files, which no run changes.
func newPathGuards(ctx context.Context, s *spec.Spec, dir string, protected []string) (*pathGuards, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	caps, err := spec.Instantiate(ctx, s, nil, capabilities.Setup{Dir: real, CheckOnly: true, Protected: capabilities.NewProtected(protected...)})
	if err != nil {
		return nil, err
	}
	fallback, err := filesystem.New(filesystem.Options{RootDir: real, Tools: []string{filesystem.ToolReadFile}}, "")
	if err != nil {
		_ = capabilities.CloseAll(caps)
		return nil, err
	}
	g := &pathGuards{dir: real, hooks: githooks.NewDirs(real, nil), caps: append(caps, fallback), fallback: fallback}
	for _, c := range caps {
		if pg, ok := capabilities.As[capabilities.PathGuard](c); ok {
			g.guards = append(g.guards, pg)
		}
	}
	return g, nil
}

// Close closes the capabilities built to be asked.
func (g *pathGuards) Close() { _ = capabilities.CloseAll(g.caps) }

// access is what the capabilities say of rel, a clean slash-separated path
// in the workspace: secret or protected when any capability covering it
// says so; the fallback's word when none covers it.
func (g *pathGuards) access(rel string) capabilities.PathAccess {
	abs := filepath.Join(g.dir, filepath.FromSlash(rel))
	var out capabilities.PathAccess
	for _, pg := range g.guards {
		a := pg.GuardPath(abs)
		if !a.Covered {
			continue
		}
		out.Covered = true
		if (a.Secret && !out.Secret) || (a.Protected && !out.Secret && !out.Protected) {
			out.Secret, out.Protected, out.Reason = out.Secret || a.Secret, out.Protected || a.Protected, a.Reason
		}
	}
	if !out.Covered {
		return g.fallback.GuardPath(abs)
	}
	return out
}

// secret reports whether the model could never be shown rel.
func (g *pathGuards) secret(rel string) bool { return g.access(rel).Secret }

// refusal says why no change to rel may be taken back, or "" when one may:
// it is in a .git directory (or what a file system takes for one), in the
// hooks directory core.hooksPath puts in the workspace, a configuration
// file git reads there (githooks.Dirs.Check), secret or protected.
func (g *pathGuards) refusal(rel string) string {
	for c := range strings.SplitSeq(rel, "/") {
		if sandbox.IsDotGit(c) {
			return fmt.Sprintf("%s: inside a .git directory (%q)", rel, c)
		}
	}
	// A hook planted in the hooks directory would run at the user's next
	// commit; so would the hooks a core.hooksPath written in a file git
	// reads configuration from names (one .git/config includes, say).
	switch h, whole, c := g.hooks.Check(rel); {
	case h != "" && !whole:
		return fmt.Sprintf("%s: a git hook (core.hooksPath names %q)", rel, h)
	case h != "":
		return fmt.Sprintf("%s: inside git's hooks directory (%q)", rel, h)
	case c != "":
		return fmt.Sprintf("%s: a file git reads configuration from (%q)", rel, c)
	}
	if a := g.access(rel); a.Secret || a.Protected {
		return rel + ": " + a.Reason
	}
	return ""
}

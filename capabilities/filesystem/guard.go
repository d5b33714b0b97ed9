package filesystem

import (
	"path/filepath"

	"github.com/agentspec/agentspec/capabilities"
)

// GuardPath says what the tools let the model do with path, an absolute,
// symlink-resolved path: nothing is said of one outside the root. A path
// is secret when a secret pattern hides it, and protected when a change to
// it is refused for its protection (patterns, .git, the spec's files), and
// denied when a denied or secret pattern hides it, as the tools decide it.
func (c *Capability) GuardPath(path string) capabilities.PathAccess {
	rel, err := filepath.Rel(c.fs.rootDir, path)
	if err != nil || !within(path, c.fs.rootDir) {
		return capabilities.PathAccess{}
	}
	rel = filepath.ToSlash(rel)
	a := capabilities.PathAccess{Covered: true}
	if what, ok := c.fs.protectedBy(rel); ok {
		a.Protected, a.Reason = true, "protected (matches "+pyRepr(what)+")"
	}
	if p, ok := matchAny(c.fs.denied, rel, true); ok {
		a.Denied, a.Reason = true, "denied (matches "+pyRepr(p)+")"
	}
	if p, ok := matchAny(c.fs.secret, rel, true); ok {
		a.Secret, a.Reason = true, "secret (matches "+pyRepr(p)+")"
	}
	return a
}

package filesystem

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentspec/agentspec/capabilities"
)

// GuardPath says what the tools decide: a denied or secret path is
// denied, a secret one secret too, a protected one protected, and nothing
// of a path outside the root.
func TestGuardPath(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{DeniedPatterns: []string{"private"}}, map[string]string{
		"private/a.txt": "a", ".env": "K=1", ".env.example": "K=", "notes.md": "n", ".git/config": "c",
	})
	for rel, want := range map[string]capabilities.PathAccess{
		"private":       {Covered: true, Denied: true, Reason: "denied (matches 'private')"},
		"private/a.txt": {Covered: true, Denied: true, Reason: "denied (matches 'private')"},
		".env":          {Covered: true, Denied: true, Secret: true, Protected: true, Reason: "secret (matches '**/.env')"},
		".env.example":  {Covered: true, Protected: true, Reason: "protected (matches '.env.*')"},
		"notes.md":      {Covered: true},
		".git/config":   {Covered: true, Protected: true, Reason: "protected (matches '.git/*')"},
	} {
		assert.Equal(t, want, c.GuardPath(filepath.Join(c.RootDir(), rel)), rel)
	}
	assert.Equal(t, capabilities.PathAccess{}, c.GuardPath(filepath.Dir(c.RootDir())))
}

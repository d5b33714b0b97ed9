//go:build !unix

package filesystem

import (
	"path/filepath"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// rgWorkDir names the canonical rel dir as rg's working directory by its host
// path: nothing here names a directory by a descriptor a child can enter.
func (fs *FS) rgWorkDir(_ *sandbox.Cursor, dir string) string {
	return filepath.Join(fs.rootDir, filepath.FromSlash(dir))
}

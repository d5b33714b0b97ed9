//go:build unix

package filesystem

import (
	"path/filepath"
	"sync/atomic"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// rgWorkDir names the directory c is at, the canonical rel dir, as rg's
// working directory: through c's descriptor where the system can name one
// (Linux), so that rg starts in the very directory that was checked even if
// its path now leads elsewhere; by its host path otherwise, where the checks
// of what rg prints are all that stand between rg and a swapped path.
func (fs *FS) rgWorkDir(c *sandbox.Cursor, dir string) string {
	if p, ok := c.WorkDir(); ok && !rgByPath.Load() {
		return p
	}
	return filepath.Join(fs.rootDir, filepath.FromSlash(dir))
}

// rgByPath starts rg by host path even where a descriptor can name its
// directory: tests set it to show that the checks of what rg prints hold on
// their own, as they must on systems without such names.
var rgByPath atomic.Bool

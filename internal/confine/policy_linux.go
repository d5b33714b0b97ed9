package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// resolved checks c and returns it with W and T as the kernel names them
// (symlinks resolved), and the paths below them renamed to match: the init
// finds W and T among the mount points by those names, and opens masks
// and ReadOnly paths beneath them.
func (c Command) resolved() (Command, error) {
	if !filepath.IsAbs(c.Dir) {
		return c, fmt.Errorf("the command's directory %q is not an absolute path", c.Dir)
	}
	// Checked here too, so the caller gets the *fs.PathError (ENOENT,
	// ENOTDIR), in a *DirError, without a helper started.
	if fi, err := os.Stat(c.Dir); err != nil {
		return c, &DirError{Err: fmt.Errorf("the command's directory: %w", err)}
	} else if !fi.IsDir() {
		return c, &DirError{Err: fmt.Errorf("the command's directory: %w", &os.PathError{Op: "chdir", Path: c.Dir, Err: syscall.ENOTDIR})}
	}
	if !c.Sandbox {
		return c, nil
	}
	p := c.Policy
	for _, d := range []struct {
		name string
		dir  *string
	}{{"workspace root", &p.Root}, {"temp directory", &p.Temp}} {
		if !filepath.IsAbs(*d.dir) {
			return c, fmt.Errorf("the %s %q is not an absolute path", d.name, *d.dir)
		}
		*d.dir = filepath.Clean(*d.dir)
		real, err := filepath.EvalSymlinks(*d.dir)
		if err != nil {
			return c, fmt.Errorf("the %s: %w", d.name, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return c, fmt.Errorf("the %s %q is not a directory", d.name, *d.dir)
		}
		if real == "/" {
			return c, fmt.Errorf("the %s %q is /, which cannot be confined", d.name, *d.dir)
		}
		rename := func(path string) string {
			if path == *d.dir {
				return real
			}
			if rest, ok := strings.CutPrefix(path, strings.TrimSuffix(*d.dir, "/")+"/"); ok {
				return filepath.Join(real, rest)
			}
			return path
		}
		c.Dir = rename(filepath.Clean(c.Dir))
		p.Masks = mapPaths(p.Masks, rename)
		p.ReadOnly = mapPaths(p.ReadOnly, rename)
		*d.dir = real
	}
	c.Policy = p
	return c, nil
}

func mapPaths(paths []string, f func(string) string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = f(filepath.Clean(p))
	}
	return out
}

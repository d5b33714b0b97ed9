package shell

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentspec/agentspec/capabilities"
)

// HomeCredentials are the paths below the user's home directory that a
// command reads as empty (D13.2), whatever the workspace is.
var HomeCredentials = []string{
	".ssh", ".aws", ".gnupg", ".docker", ".kube", ".config/gh", ".config/gcloud",
	".netrc", ".pypirc", ".npmrc", ".git-credentials",
}

// hidden is what the walk of the workspace found: the paths a command
// must read as empty, and the .git directories and files it must not
// change.
type hidden struct {
	masks, readOnly []string
}

// findHidden walks root (absolute, real) and collects every file or
// directory that access says is secret or denied, and, unless gitWrites,
// every .git directory or file, at any depth; then the credentials in
// home. A directory masked or made read-only is not entered: the mount
// covers what is below it.
//
// The walk fails closed: a directory below root that it cannot read (its
// permissions, or a path longer than PATH_MAX, where a command may have
// moved it) may hold secrets or a .git, so it is masked whole. A root it
// cannot read is an error: nothing could be hidden.
func findHidden(root, home string, access func(path string) capabilities.PathAccess, gitWrites bool) (hidden, error) {
	var h hidden
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			// Only a directory that cannot be read gets here (d is it).
			h.masks = append(h.masks, path)
			return fs.SkipDir
		}
		if path == root {
			return nil
		}
		if d.Name() == ".git" && !gitWrites {
			h.readOnly = append(h.readOnly, path)
			return skip(d)
		}
		a := access(path)
		if !a.Secret && !a.Denied {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// A mount on a symlink lands on its target: mask that, so the
			// link reads as empty, wherever it leads.
			if real, err := filepath.EvalSymlinks(path); err == nil {
				h.masks = append(h.masks, real)
			}
			return nil
		}
		h.masks = append(h.masks, path)
		return skip(d)
	})
	if err != nil {
		return hidden{}, err
	}
	if home != "" {
		for _, rel := range HomeCredentials {
			p := filepath.Join(home, rel)
			if _, err := os.Lstat(p); err == nil {
				if real, err := filepath.EvalSymlinks(p); err == nil {
					p = real
				}
				h.masks = append(h.masks, p)
			}
		}
	}
	return h, nil
}

func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

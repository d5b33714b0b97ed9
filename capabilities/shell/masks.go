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
// directory that guard says is secret or denied, and, unless gitWrites,
// every .git directory or file, at any depth; then the credentials in
// home. A directory masked or made read-only is not entered: the mount
// covers what is below it. Entries the walk cannot read are passed over.
// fallback answers for the paths guard does not cover.
func findHidden(root, home string, guard, fallback capabilities.PathGuard, gitWrites bool) hidden {
	var h hidden
	access := func(path string) capabilities.PathAccess {
		if guard != nil {
			if a := guard.GuardPath(path); a.Covered {
				return a
			}
		}
		if fallback != nil {
			return fallback.GuardPath(path)
		}
		return capabilities.PathAccess{}
	}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && path != root {
				return fs.SkipDir
			}
			return nil
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
	return h
}

func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

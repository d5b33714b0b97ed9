package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/spec"
)

// confine checks that a job's spec names nothing outside the worker's
// reach: its script file lies beside the spec, and each FileSystem root stays
// in the job's workspace (workspace, a real path), symbolic links followed. The
// loader has already refused schemas that refer to files or URLs. Options of
// capability types other than FileSystem are the business of the binary
// that registers them.
func confine(s *spec.Spec, workspace string) error {
	if name, ok := strings.CutPrefix(strings.TrimSpace(s.Model), "script:"); ok {
		if _, err := bundlePath(name); err != nil {
			return fmt.Errorf("the spec's script file %s: %w", name, err)
		}
	}
	for _, c := range s.Capabilities {
		if c.Name != filesystem.TypeName {
			continue
		}
		var o struct {
			RootDir string `json:"root_dir"`
		}
		if err := json.Unmarshal(c.Options, &o); err != nil {
			return fmt.Errorf("%s options: %w", c.Name, err)
		}
		dir := o.RootDir
		if dir == "" {
			dir = "."
		}
		if filepath.IsAbs(dir) || strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, `\`) {
			return fmt.Errorf("%s root_dir %q: a job's root must be relative to its workspace", c.Name, dir)
		}
		real, err := filepath.EvalSymlinks(filepath.Join(workspace, filepath.FromSlash(dir)))
		if errors.Is(err, os.ErrNotExist) {
			real, err = filepath.Abs(filepath.Join(workspace, filepath.FromSlash(dir)))
		}
		if err != nil || !within(workspace, real) {
			return fmt.Errorf("%s root_dir %q: leads out of the job's workspace", c.Name, dir)
		}
	}
	return nil
}

// within reports whether path (absolute, clean) is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

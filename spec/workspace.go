package spec

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// WorkspacePath checks a path a spec gives relative to the workspace (an
// expected output file, a check's file, an input glob) and returns it cleaned,
// with "/" separators. It must be relative and must not climb out with "..":
// a spec never names anything outside the job's directory.
func WorkspacePath(name string) (string, error) {
	p := filepath.ToSlash(name)
	switch {
	case strings.TrimSpace(p) == "":
		return "", errors.New("the path is empty")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(name) || filepath.VolumeName(name) != "":
		return "", fmt.Errorf("%q must be relative to the workspace", name)
	}
	p = path.Clean(p)
	if slices.Contains(strings.Split(p, "/"), "..") {
		return "", fmt.Errorf("%q leaves the workspace", name)
	}
	return p, nil
}

// checkWorkspacePaths reports workspace paths that WorkspacePath refuses.
func checkWorkspacePaths(d *document, root map[string]any) {
	ws, _ := root["workspace"].(map[string]any)
	check := func(ptr string, v any) {
		name, ok := v.(string)
		if !ok || d.reported(ptr) {
			return
		}
		if _, err := WorkspacePath(name); err != nil {
			d.add(ptr, d.pos(ptr), prefixed(ptr, err.Error()))
		}
	}
	for _, key := range []string{"input_globs", "expected_output_files"} {
		list, _ := ws[key].([]any)
		for i, v := range list {
			check(index("/workspace/"+key, i), v)
		}
	}
	checks, _ := ws["checks"].([]any)
	for i, c := range checks {
		m, _ := c.(map[string]any)
		check(index("/workspace/checks", i)+"/file", m["file"])
	}
}

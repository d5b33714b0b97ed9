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
			return
		}
		if at, ok := placeholderAt(name); ok {
			d.add(ptr, d.pos(ptr), prefixed(ptr, name[at[0]:at[1]]+" is not filled here; placeholders are filled in "+
				"instructions, description and the string values of capability arguments only, "+
				"and a workspace path is matched as written: write one that needs no value"))
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

// placeholderAt is where the first placeholder of text is, one that is not
// escaped (EscapedAt).
func placeholderAt(text string) ([]int, bool) {
	for _, m := range placeholderRE().FindAllStringIndex(text, -1) {
		if literal, _ := EscapedAt(text, m[0]); !literal {
			return m, true
		}
	}
	return nil, false
}

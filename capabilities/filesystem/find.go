package filesystem

import (
	"context"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

func newFindFiles(fs *FS) capabilities.Tool {
	return &tool[findArgs]{
		name: ToolFindFiles,
		description: "Find files and directories by name with a path glob relative to path, e.g. '*.py' " +
			"(top level of path only) or '**/*.json' (any depth). In this glob '*', '?' and [...] match within one " +
			"path component (never across '/'); '**' matches any number of directories; a trailing '/' keeps only " +
			"directories. Results are sorted by path; directories end with '/'. Hidden entries are skipped.",
		params: sharedSchema(schemaKey{tool: ToolFindFiles}, findFilesSchema),
		call: func(ctx context.Context, args findArgs) (string, error) {
			return fs.findFiles(ctx, args.Pattern, deref(args.Path, "."))
		},
	}
}

func findFilesSchema(schemaKey) map[string]any {
	return object(map[string]any{
		"pattern": param("string", "The path glob, relative to path: '*' stays within one directory, '**/' crosses any number, e.g. '**/*.go'."),
		"path":    param("string", "The directory to search from, relative to the working directory. Default '.'."),
	}, "pattern")
}

type findArgs struct {
	Pattern string  `json:"pattern"`
	Path    *string `json:"path,omitempty"`
}

// findFiles implements find_files.
func (fs *FS) findFiles(ctx context.Context, pattern, path string) (string, error) {
	g, err := compileGlob(pattern)
	if err != nil {
		return "", err
	}
	rel, w, err := startWalk(fs, path, g.Start())
	if err != nil {
		return "", err
	}
	defer w.Close()

	found := listing{limit: fs.opts.MaxFindResults}
	var in incomplete
	if !hidden(rel) {
		in, err = walkInto(ctx, w, &found, func(w *walk.Walker[glob.State]) (string, bool) { return fs.findEntry(w, g) })
		if err != nil {
			return "", err
		}
	}
	return fs.searched(ctx, rel, pattern, SearchFind, &found, in, "No matches found.", "matches")
}

// findEntry matches the walker's current entry against g, entering it when
// entries below it may match, and renders it when it is a visible result.
func (fs *FS) findEntry(w *walk.Walker[glob.State], g *glob.FindFiles) (string, bool) {
	e := w.Entry()
	name := e.Name()
	if hiddenName(name) {
		return "", false
	}
	realDir := e.Type == walk.Dir
	state := g.Step(w.State(), name, realDir)
	if realDir && g.Alive(state) && !fs.entryDenied(e.Path) {
		w.Descend(state)
	}
	isDir := realDir
	switch {
	case !g.Matched(state, true): // not a result, whatever its type
		return "", false
	case e.Type == walk.Symlink:
		target, ok := fs.visibleTarget(e.Path)
		if !ok {
			return "", false
		}
		st, err := fs.dir.Lstat(target)
		if err != nil {
			return "", false // dangling
		}
		isDir = st.IsDir()
	case !fs.entryReadable(e.Path):
		return "", false
	}
	if !g.Matched(state, isDir) {
		return "", false
	}
	if isDir {
		return fs.relToCwd(e.Path) + "/", true
	}
	return fs.relToCwd(e.Path), true
}

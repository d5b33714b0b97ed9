package filesystem

import (
	"context"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/agentspec/agentspec/internal/glob"
)

// list_files lists what rg lists, each path checked again before it is shown
// (rg.go says why and how).

func newListFiles(fs *FS) capabilities.Tool {
	return &tool[listFilesArgs]{
		name: ToolListFiles,
		description: "List the files under a directory, recursively, sorted by path (ripgrep). Respects " +
			".gitignore inside git repositories and .ignore files; glob (a ripgrep glob, gitignore-style: without " +
			"a '/' it matches file names at any depth, e.g. '*.py'; a leading '!' excludes, e.g. '!*.min.js') " +
			"filters the files and overrides ignore files. Hidden files are not listed.",
		params: sharedSchema(schemaKey{tool: ToolListFiles}, listFilesSchema),
		call: func(ctx context.Context, args listFilesArgs) (string, error) {
			return fs.listFiles(ctx, deref(args.Path, "."), deref(args.Glob, ""))
		},
	}
}

func listFilesSchema(schemaKey) map[string]any {
	return object(map[string]any{
		"path": param("string", "The directory to list, relative to the working directory. Default '.'."),
		"glob": param("string", "Only list files matching this ripgrep glob (gitignore-style: '*.py' matches at any depth, 'src/*.py' only directly in src)."),
	})
}

type listFilesArgs struct {
	Path *string `json:"path,omitempty"`
	Glob *string `json:"glob,omitempty"`
}

// listFiles implements list_files.
func (fs *FS) listFiles(ctx context.Context, path, pattern string) (string, error) {
	if err := checkRipgrepArg("glob", pattern, MaxRipgrepGlob); err != nil {
		return "", err
	}
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	notDir := capabilities.Retry("Path %s is not a directory.", pyRepr(path))
	if st, err := fs.dir.Lstat(rel); err != nil || !st.IsDir() {
		return "", notDir
	}
	args := []string{"--null", "--color=never", "--files", "--sort", "path"}
	args = append(args, glob.RipgrepArgs(pattern)...)
	found := listing{limit: fs.opts.MaxFindResults}
	in, err := fs.runRipgrep(ctx, path, rel, notDir, rg.SplitPaths, args, "", &found, func(rec []byte, paths *rgPaths) (string, bool) {
		full, ok := paths.check(string(rec))
		if !ok {
			return "", false
		}
		return fs.relToCwd(full), true
	})
	if err != nil {
		return "", err
	}
	return fs.searched(ctx, rel, pattern, SearchFind, &found, in, "No files found.", "files")
}

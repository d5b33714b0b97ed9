package filesystem

import (
	"context"
	"errors"
	iofs "io/fs"
	"strconv"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

func newListDirectory(fs *FS) capabilities.Tool {
	return &tool[listArgs]{
		name: ToolListDirectory,
		description: "List a directory's entries, sorted by name: directories end with '/', files show their size. " +
			"Hidden (dot) entries are not shown. Paths are relative to the working directory.",
		params: sharedSchema(schemaKey{tool: ToolListDirectory}, listDirectorySchema),
		call: func(ctx context.Context, args listArgs) (string, error) {
			return fs.listDirectory(ctx, deref(args.Path, "."))
		},
	}
}

func listDirectorySchema(schemaKey) map[string]any {
	return object(map[string]any{
		"path": param("string", "The directory to list, relative to the working directory. Default '.'."),
	})
}

type listArgs struct {
	Path *string `json:"path,omitempty"`
}

// listDirectory implements list_directory.
func (fs *FS) listDirectory(ctx context.Context, path string) (string, error) {
	rel, w, err := startWalk(fs, path, struct{}{})
	if err != nil {
		return "", err
	}
	defer w.Close()

	found := listing{limit: fs.opts.MaxListResults}
	var in incomplete
	for w.Next() {
		if stop, err := walkInterrupted(ctx, &in); err != nil {
			return "", err
		} else if stop {
			break
		}
		if line, ok := fs.listEntry(w); ok && !found.add(line) {
			break
		}
	}
	in.visited = w.Capped()
	fs.watchDir(rel)
	if err := fs.emit(ctx, &DirectoryListedEvent{EventBase: fs.base(ctx, rel), EntryCount: len(found.lines)}); err != nil {
		return "", err
	}
	return withNotes(found.render("(empty directory)", "entries"), in), nil
}

// listEntry renders the walker's current entry as list_directory shows it,
// or reports false when the entry is not to be shown.
func (fs *FS) listEntry(w *walk.Walker[struct{}]) (string, bool) {
	e := w.Entry()
	if hidden(e.Path) {
		return "", false
	}
	var typ walk.Type
	var size int64
	if e.Type == walk.Symlink {
		target, ok := fs.visibleTarget(e.Path)
		if !ok {
			return "", false
		}
		st, err := fs.dir.Lstat(target)
		if err != nil {
			return "", false // dangling
		}
		typ, size = walk.Regular, st.Size()
		if st.IsDir() {
			typ = walk.Dir
		}
	} else {
		if !fs.entryReadable(e.Path) {
			return "", false
		}
		// The listing told the directories apart: only a file's size
		// needs a stat.
		if typ = e.Type; typ != walk.Dir {
			var err error
			if typ, size, err = w.Lstat(); err != nil {
				return "", false // vanished
			}
		}
	}
	name := fs.relToCwd(e.Path)
	if typ == walk.Dir {
		return name + "/", true
	}
	return name + "  (" + strconv.FormatInt(size, 10) + " bytes)", true
}

// visibleTarget resolves the symlink at the walker entry rel and returns its
// target, or false when a walker must not show it: the target lies outside
// the root or fails the read-level patterns.
func (fs *FS) visibleTarget(rel string) (string, bool) {
	target, err := fs.resolveEntry(rel)
	if err != nil || !fs.readable(target) {
		return "", false
	}
	return target, true
}

// startWalk starts a walk of the directory the model named as path, its
// root carrying state, once path has resolved and passed checkWalkRoot. A
// root that is missing or not a directory is "Not a directory", any other
// failure (a directory the process may not read) the OS error.
func startWalk[S any](fs *FS, path string, state S) (string, *walk.Walker[S], error) {
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", nil, err
	}
	w, err := newWalk(fs, rel, state)
	switch {
	case errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return "", nil, capabilities.Retry("Not a directory: %s", path)
	case err != nil:
		return "", nil, osError(err)
	}
	return rel, w, nil
}

// deref returns *p, or def when p is nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

package filesystem

import (
	"context"
	"errors"
	iofs "io/fs"
	"strconv"
	"sync"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
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
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	last, again := fs.listings.get(rel)
	var w *walk.Walker[struct{}]
	var stamp walk.Stamp
	if again {
		if w, stamp, err = sandbox.NewTrackedWalker(fs.dir, rel, struct{}{}, last.stamp); w != nil {
			bound(w)
		}
	} else {
		w, err = newWalk(fs, rel, struct{}{})
	}
	if err != nil {
		return "", walkError(path, err)
	}
	out, count := last.out, last.count
	if w != nil {
		var complete bool
		if out, count, complete, err = fs.listWalk(ctx, w); err != nil {
			return "", err
		}
		kept := listed{} // listed once: it is tracked from the next listing on
		if again && complete && w.Tracked() {
			kept = listed{stamp: stamp, out: out, count: count}
		}
		fs.listings.put(rel, kept)
	}
	fs.watchDir(rel)
	if err := fs.emit(ctx, &DirectoryListedEvent{EventBase: fs.base(ctx, rel), EntryCount: count}); err != nil {
		return "", err
	}
	return out, nil
}

// listWalk renders the directory w walks, and reports whether the result is
// what the directory shows: the walk was not cut short by the call's
// deadline or the walk's entry limit.
func (fs *FS) listWalk(ctx context.Context, w *walk.Walker[struct{}]) (out string, count int, complete bool, err error) {
	defer w.Close()
	found := listing{limit: fs.opts.MaxListResults}
	in, err := walkInto(ctx, w, &found, fs.listEntry)
	if err != nil {
		return "", 0, false, err
	}
	return withNotes(found.render("(empty directory)", "entries"), in), len(found.lines), !in.timedOut && !in.visited, nil
}

// listings keeps, for each directory list_directory showed more than once
// lately, its last listing under the walk.Stamp it was read at: while the
// directory's stamp stays the same, the listing is shown again without
// reading the directory or describing its files (a stat of each costs about
// 2 us, most of a listing's time). A directory's first listing is not
// tracked, so a job that lists a directory once adds no watches.
//
// Measured on a 2-core VM: BenchmarkListDirectory (120 files and 12
// directories, listed again and again) takes 11 us a listing against 513 us
// reading it each time; BenchmarkListDirectoryChanging (a file grown before
// each listing) 438 us. How it is kept valid: walk.NewTrackedAt and
// docs/filesystem.md.
type listings struct {
	mu sync.Mutex
	m  map[string]listed
}

type listed struct {
	stamp walk.Stamp // zero: listed once, or not kept (nothing else is set)
	out   string
	count int
}

// maxListings is how many directories an FS keeps listings of.
const maxListings = 64

// get returns rel's last listing, and whether rel was listed before.
func (l *listings) get(rel string) (listed, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[rel]
	return v, ok
}

func (l *listings) put(rel string, v listed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxListings {
		l.m = make(map[string]listed)
	}
	l.m[rel] = v
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
	if err != nil {
		return "", nil, walkError(path, err)
	}
	return rel, w, nil
}

// walkError is the error of a walk of path that could not start.
func walkError(path string, err error) error {
	if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return capabilities.Retry("Not a directory: %s", path)
	}
	return osError(err)
}

// deref returns *p, or def when p is nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

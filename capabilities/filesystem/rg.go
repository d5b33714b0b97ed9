package filesystem

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	iofs "io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/text"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/walk"
)

// The ripgrep tools run the rg executable: never through a shell, always
// with --no-config (so no RIPGREP_CONFIG_PATH adds arguments), the pattern
// always through --regexp (so it is never read as a flag), in a directory
// that has passed the walk-root checks. rg applies its own ignore rules
// (.gitignore inside a git repository, .ignore anywhere; an explicit glob
// overrides them), and every path it prints is checked again before it is
// shown: dot components drop it, its directory must resolve inside the root,
// and its target must pass the read-level patterns.

func init() {
	registerTool(ToolListFiles, func(fs *FS) capabilities.Tool {
		return &tool{
			name: ToolListFiles,
			description: "List the files under a directory, recursively, sorted by path (ripgrep). Respects " +
				".gitignore inside git repositories and .ignore files; glob (ripgrep glob syntax, e.g. '*.py' or " +
				"'!*.min.js') filters the files and overrides ignore files. Hidden files are not listed.",
			params: object(map[string]any{
				"path": param("string", "The directory to list, relative to the working directory. Default '.'."),
				"glob": param("string", "Only list files matching this ripgrep glob."),
			}),
			call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var args struct {
					Path *string `json:"path,omitempty"`
					Glob *string `json:"glob,omitempty"`
				}
				if err := decodeArgs(raw, &args); err != nil {
					return "", err
				}
				return fs.listFiles(ctx, deref(args.Path, "."), deref(args.Glob, ""))
			},
		}
	})
	registerTool(ToolGrep, func(fs *FS) capabilities.Tool {
		return &tool{
			name: ToolGrep,
			description: "Search file contents with ripgrep. Returns path:line:text for matches and path-line-text " +
				"for context lines, sorted by path. pattern is a ripgrep (Rust) regex unless literal is set. path " +
				"may be a file or a directory. Respects .gitignore inside git repositories and .ignore files; an " +
				"explicit glob overrides them. Hidden files are not searched.",
			params: object(map[string]any{
				"pattern":     param("string", "The regular expression (or, with literal, the text) to search for."),
				"path":        param("string", "The file or directory to search, relative to the working directory. Default '.'."),
				"glob":        param("string", "Only search files matching this ripgrep glob, e.g. '*.py'."),
				"file_type":   param("string", "Only search files of this ripgrep type, e.g. 'py' or 'go'."),
				"ignore_case": param("boolean", "Match case-insensitively. Default false."),
				"literal":     param("boolean", "Treat pattern as literal text, not a regex. Default false."),
				"context":     param("integer", "Lines of context around each match, 0 to 20. Default 0."),
			}, "pattern"),
			call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var args struct {
					Pattern    string  `json:"pattern"`
					Path       *string `json:"path,omitempty"`
					Glob       *string `json:"glob,omitempty"`
					FileType   *string `json:"file_type,omitempty"`
					IgnoreCase *bool   `json:"ignore_case,omitempty"`
					Literal    *bool   `json:"literal,omitempty"`
					Context    *int    `json:"context,omitempty"`
				}
				if err := decodeArgs(raw, &args); err != nil {
					return "", err
				}
				return fs.grep(ctx, grepArgs{
					pattern:    args.Pattern,
					path:       deref(args.Path, "."),
					glob:       deref(args.Glob, ""),
					fileType:   deref(args.FileType, ""),
					ignoreCase: deref(args.IgnoreCase, false),
					literal:    deref(args.Literal, false),
					context:    deref(args.Context, 0),
				})
			},
		}
	})
}

var errNoRipgrep = capabilities.Retry("ripgrep (rg) is not installed. Install it, or use the pure-Python search tools.")

// listFiles implements list_files.
func (fs *FS) listFiles(ctx context.Context, path, glob string) (string, error) {
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	if st, err := fs.lstat(rel); err != nil || !st.IsDir() {
		return "", capabilities.Retry("Path %s is not a directory.", pyRepr(path))
	}
	args := []string{"--null", "--color=never", "--files", "--sort", "path"}
	if glob != "" {
		args = append(args, "--glob", glob)
	}
	found := listing{limit: fs.opts.MaxFindResults}
	truncated, err := fs.runRipgrep(ctx, rel, rg.SplitPaths, args, func(rec []byte, paths *rgPaths) bool {
		full := join(rel, string(rec))
		if _, ok := paths.check(full); !ok {
			return true
		}
		return found.add(fs.relToCwd(full))
	})
	if err != nil {
		return "", err
	}
	found.truncated = truncated
	if err := fs.searched(ctx, rel, glob, SearchFind, &found); err != nil {
		return "", err
	}
	return found.render("No files found.", "files"), nil
}

type grepArgs struct {
	pattern, path, glob, fileType string
	ignoreCase, literal           bool
	context                       int
}

// grep implements grep.
func (fs *FS) grep(ctx context.Context, a grepArgs) (string, error) {
	if a.context < 0 || a.context > 20 {
		return "", capabilities.Retry("context must be between 0 and 20.")
	}
	rel, err := fs.resolveGated(a.path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	// rg runs in the directory searched, or in a file's directory with the
	// file as its target, so that every path it prints is relative to dir.
	dir, target := rel, "."
	switch st, err := fs.lstat(rel); {
	case err == nil && st.IsDir():
	case err == nil && st.Mode().IsRegular():
		var name string
		dir, name = split(rel)
		target = "./" + name
	default:
		return "", capabilities.Retry("Path %s is not a file or directory.", pyRepr(a.path))
	}
	args := []string{
		"--null", "--color=never", "--line-number", "--with-filename", "--sort", "path",
		"--max-columns", "4096", "--max-columns-preview", "--context", strconv.Itoa(a.context),
	}
	if a.glob != "" {
		args = append(args, "--glob", a.glob)
	}
	if a.fileType != "" {
		// One argument: rg would read a separate value starting with
		// "--" as a flag of its own (globs and patterns it never does).
		args = append(args, "--type="+a.fileType)
	}
	if a.ignoreCase {
		args = append(args, "--ignore-case")
	}
	if a.literal {
		args = append(args, "--fixed-strings")
	}
	args = append(args, "--regexp", a.pattern, "--", target)

	found := listing{limit: fs.opts.MaxSearchResults}
	truncated, err := fs.runRipgrep(ctx, dir, rg.SplitMatches, args, func(rec []byte, paths *rgPaths) bool {
		l, ok := rg.ParseLine(rec)
		if !ok {
			return true
		}
		full := join(dir, strings.TrimPrefix(string(l.Path), "./"))
		if _, ok := paths.check(full); !ok {
			return true
		}
		sep := ":"
		if l.Context {
			sep = "-"
		}
		return found.add(fs.relToCwd(full) + sep + string(l.Number) + sep + string(text.Decode(l.Text)))
	})
	if err != nil {
		return "", err
	}
	found.truncated = truncated
	if err := fs.searched(ctx, rel, a.pattern, SearchGrep, &found); err != nil {
		return "", err
	}
	return found.render("No matches found.", "lines"), nil
}

// runRipgrep runs rg with args in dir, a canonical rel, and hands each output
// record (as split cuts them) to record until it returns false, which stops
// rg and counts as truncated. A record too long to be a path or a line also
// ends the output as truncated.
func (fs *FS) runRipgrep(ctx context.Context, dir string, split bufio.SplitFunc, args []string, record func([]byte, *rgPaths) bool) (truncated bool, err error) {
	paths, err := newRGPaths(fs, dir)
	if err != nil {
		return false, osError(err)
	}
	defer paths.close()
	p, err := rg.Start(ctx, filepath.Join(fs.rootDir, filepath.FromSlash(dir)), split, args...)
	var chdir *iofs.PathError
	switch {
	case errors.Is(err, rg.ErrNotInstalled):
		return false, errNoRipgrep
	case errors.As(err, &chdir) && chdir.Op == "chdir":
		// The directory went away since it was checked; name it as the
		// model knows it, never by its host path.
		return false, osError(&iofs.PathError{Op: "chdir", Path: dir, Err: chdir.Err})
	case err != nil:
		return false, err
	}
	for {
		rec, ok := p.Next()
		if !ok {
			truncated = p.Truncated()
			break
		}
		if !record(rec, paths) {
			truncated = true
			p.Stop()
			break
		}
	}
	var failure *rg.Failure
	switch err := p.Wait(); {
	case errors.As(err, &failure):
		return false, capabilities.Retry("ripgrep failed: %s", fs.scrubHostPaths(failure.Error()))
	case err != nil:
		return false, err
	}
	return truncated, nil
}

// scrubHostPaths rewrites the root's absolute path in rg's messages (about
// an ignore file, say) as root-relative text, so that no host path reaches the
// model.
func (fs *FS) scrubHostPaths(msg string) string {
	msg = strings.ReplaceAll(msg, fs.rootDir+string(filepath.Separator), "")
	return strings.ReplaceAll(msg, fs.rootDir, ".")
}

// rgPaths checks the paths rg prints. rg walks without following symlinks,
// so every directory it names was a real directory below the one it ran in
// (base) when rg read it; the check confirms that with one lstat per directory, remembered for
// the directory's other files, and resolves the directory in full only if it
// has become something else since. A file is judged by its name in its
// resolved directory: rg lists only regular files, never symlinks, when it
// walks, and a file given as grep's target was resolved before rg saw it.
type rgPaths struct {
	fs   *FS
	st   *walk.Stater
	dirs map[string]rgDir
}

// rgDir is the decision about one directory rg printed files in.
type rgDir struct {
	target string // canonical rel the directory resolves to
	ok     bool   // it lies inside the root and may be walked
}

func newRGPaths(fs *FS, base string) (*rgPaths, error) {
	st, err := walk.NewStater(fs.root)
	if err != nil {
		return nil, err
	}
	return &rgPaths{fs: fs, st: st, dirs: map[string]rgDir{base: {target: base, ok: true}}}, nil
}

func (c *rgPaths) close() { c.st.Close() }

// check returns the canonical rel of the file rg printed as rel (joined onto
// the directory rg ran in), or false when it must not be shown.
func (c *rgPaths) check(rel string) (string, bool) {
	if hidden(rel) {
		return "", false
	}
	dir, name := split(rel)
	d := c.dir(dir)
	if !d.ok {
		return "", false
	}
	target := join(d.target, name)
	return target, c.fs.readable(target)
}

func (c *rgPaths) dir(rel string) rgDir {
	if d, ok := c.dirs[rel]; ok {
		return d
	}
	var d rgDir
	if parent, _ := split(rel); parent != rel { // "." is decided only as base
		if p := c.dir(parent); p.ok {
			if typ, err := c.st.Lstat(rel); p.target == parent && err == nil && typ == walk.Dir {
				d = rgDir{target: rel, ok: true}
			} else if target, err := c.fs.resolveEntry(rel); err == nil {
				d = rgDir{target: target, ok: true}
			}
		}
	}
	c.dirs[rel] = d
	return d
}

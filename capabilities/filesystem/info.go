package filesystem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/internal/text"
)

// outsideWorkspace stands for any location outside the root.
const outsideWorkspace = "<outside-workspace>"

type infoArgs struct {
	Path string `json:"path"`
}

func newFileInfo(fs *FS) capabilities.Tool {
	return &tool[infoArgs]{
		name: ToolFileInfo,
		description: "Show metadata for a file or directory: type, size and, for text files, line count and content hash; " +
			"for a symlink, its target.",
		params: sharedSchema(schemaKey{tool: ToolFileInfo}, fileInfoSchema),
		call:   fs.fileInfo,
	}
}

func fileInfoSchema(schemaKey) map[string]any {
	return object(map[string]any{
		"path": param("string", "Path of the file or directory, relative to the working directory."),
	}, "path")
}

func (fs *FS) fileInfo(_ context.Context, args infoArgs) (string, error) {
	rel, err := fs.resolveGated(args.Path, fs.checkRead)
	if err != nil {
		return "", err
	}
	st, err := fs.dir.Lstat(rel)
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return "", capabilities.Retry("Path not found: %s", args.Path)
	case errors.Is(err, syscall.ELOOP):
		return "", changedToSymlink(args.Path)
	case err != nil:
		return "", osError(err)
	}
	kind := "file"
	if st.IsDir() {
		kind = "directory"
	}
	lines := []string{
		"path: " + args.Path,
		"type: " + kind,
		fmt.Sprintf("size: %d bytes", st.Size()),
	}
	// Only regular files are opened: a FIFO or device is described from its
	// metadata alone.
	if st.Mode().IsRegular() {
		text, hash, err := fs.describeContent(args.Path, rel)
		if err != nil {
			return "", err
		}
		if hash != "" {
			fs.saw(rel, hash, false) // the hash, not the content
		}
		lines = append(lines, text...)
	}
	if target, ok := fs.symlinkTarget(args.Path); ok {
		lines = append(lines, "symlink_target: "+sandbox.DisplayName(target)) // link text can hold a newline
	}
	return strings.Join(lines, "\n"), nil
}

// describeContent returns the binary, lines and hash lines of a regular file,
// and the hash of a text file.
func (fs *FS) describeContent(path, rel string) ([]string, string, error) {
	f, err := fs.dir.OpenReader(rel)
	if err != nil {
		return nil, "", openError(path, err, true)
	}
	defer f.Close()
	lr := newLineReader(f)
	defer lr.release()
	head := lr.head(text.BinaryProbe)
	if lr.err != nil {
		return nil, "", osError(lr.err)
	}
	if text.IsBinary(head) {
		return []string{"binary: True"}, "", nil
	}
	count := lr.countRest()
	if lr.err != nil {
		return nil, "", osError(lr.err)
	}
	hash := lr.hash()
	return []string{"binary: False", fmt.Sprintf("lines: %d", count), "hash: " + hash}, hash, nil
}

// symlinkTarget reports the target of the path the model named, when its
// final component (not its target) is a symlink: the link text when
// relative, root-relative when absolute inside the root, and
// <outside-workspace> otherwise, so no host path is shown.
func (fs *FS) symlinkTarget(p string) (string, bool) {
	p = strings.TrimRight(filepath.ToSlash(p), "/")
	dir, name := path.Split(p)
	if name == "" || name == "." || name == ".." {
		return "", false
	}
	parent, err := fs.resolve(dir)
	if err != nil {
		return "", false
	}
	link := sandbox.Join(parent, name)
	st, err := fs.dir.Lstat(link)
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		return "", false
	}
	target, err := fs.dir.Readlink(link)
	if err != nil {
		return "", false
	}
	if !filepath.IsAbs(target) {
		return target, true
	}
	return fs.hostPathToRel(target), true
}

// hostPathToRel spells an absolute host path root-relative, lexically, or
// as <outside-workspace>.
func (fs *FS) hostPathToRel(abs string) string {
	parts := splitAbs(abs)
	roots := [][]string{fs.rootParts}
	if fs.aliasParts != nil {
		roots = append(roots, fs.aliasParts)
	}
	for _, root := range roots {
		if len(parts) >= len(root) && slices.Equal(parts[:len(root)], root) {
			if rest := parts[len(root):]; len(rest) > 0 {
				return strings.Join(rest, "/")
			}
			return "."
		}
	}
	return outsideWorkspace
}

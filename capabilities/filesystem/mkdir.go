package filesystem

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
)

type mkdirArgs struct {
	Path string `json:"path"`
}

func newCreateDirectory(fs *FS) capabilities.Tool {
	return &tool[mkdirArgs]{
		name:        ToolCreateDirectory,
		description: "Create a directory, and any missing parent directories. Succeeds if it already exists.",
		params:      sharedSchema(schemaKey{tool: ToolCreateDirectory}, createDirectorySchema),
		call:        fs.createDirectory,
	}
}

func createDirectorySchema(schemaKey) map[string]any {
	return object(map[string]any{
		"path": param("string", "Path of the directory, relative to the working directory."),
	}, "path")
}

func (fs *FS) createDirectory(ctx context.Context, args mkdirArgs) (string, error) {
	rel, _, err := fs.resolveChange(args.Path)
	if err != nil {
		return "", err
	}
	done := "Created directory: " + args.Path
	st, err := fs.dir.Lstat(rel)
	switch {
	case err == nil && st.IsDir():
		return done, nil // nothing to change, nothing to announce
	case err == nil:
		return "", capabilities.Retry("Path %s exists and is not a directory.", pyRepr(args.Path))
	case errors.Is(err, syscall.ELOOP):
		return "", changedToSymlink(args.Path)
	case !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR):
		return "", osError(err)
	}
	existing, err := fs.checkAncestors(args.Path, rel)
	if err != nil {
		return "", err
	}
	for _, name := range strings.Split(strings.TrimPrefix(rel[len(existing):], "/"), "/") {
		if err := checkNewName(args.Path, name); err != nil {
			return "", err
		}
	}
	refusal, err := fs.announce(ctx, rel, OpCreateDirectory, "", false)
	if err != nil || refusal != "" {
		return refusal, err
	}
	if capabilities.Emitting(ctx) {
		if err := fs.recheck(args.Path, rel); err != nil {
			return "", err
		}
	}
	created, err := fs.dir.MkdirAll(rel, 0o777)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return "", changedToSymlink(args.Path)
		case errors.Is(err, syscall.ENOTDIR) && pathOf(err) == rel:
			return "", capabilities.Retry("Path %s exists and is not a directory.", pyRepr(args.Path))
		case errors.Is(err, syscall.ENOTDIR):
			return "", capabilities.Retry("Path %s has a parent that is not a directory.", pyRepr(args.Path))
		}
		return "", osError(err)
	}
	if created {
		if err := fs.emit(ctx, &DirectoryCreatedEvent{EventBase: fs.base(ctx, rel)}); err != nil {
			return "", err
		}
	}
	return done, nil
}

// checkAncestors refuses a directory whose nearest existing ancestor is not a
// directory, and returns that ancestor ("" for the root).
func (fs *FS) checkAncestors(path, rel string) (string, error) {
	for dir := rel; dir != "."; {
		dir, _ = sandbox.Split(dir)
		st, err := fs.dir.Lstat(dir)
		switch {
		case err == nil && st.IsDir():
			if dir == "." {
				return "", nil
			}
			return dir, nil
		case err == nil:
			return "", capabilities.Retry("Path %s has a parent that is not a directory.", pyRepr(path))
		case errors.Is(err, syscall.ELOOP):
			return "", changedToSymlink(path)
		case !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR):
			return "", osError(err)
		}
	}
	return "", nil
}

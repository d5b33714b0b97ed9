package filesystem

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/internal/text"
)

type writeArgs struct {
	Path         string  `json:"path"`
	Content      string  `json:"content"`
	ExpectedHash *string `json:"expected_hash,omitempty"`
}

func newWriteFile(fs *FS) capabilities.Tool {
	return &tool[writeArgs]{
		name: ToolWriteFile,
		description: "Create a file or replace its whole content. Prefer edit_file to change part of an existing file." +
			hashNote(fs, " Pass expected_hash to make sure you are not overwriting changes you have not seen."),
		params: sharedSchema(schemaKey{tool: ToolWriteFile, hashes: fs.hashes()}, writeFileSchema),
		call:   fs.writeFile,
	}
}

func writeFileSchema(k schemaKey) map[string]any {
	props := map[string]any{
		"path":    param("string", "Path of the file, relative to the working directory. The parent directory must exist."),
		"content": param("string", "The complete new content of the file."),
	}
	if k.hashes {
		props["expected_hash"] = param("string",
			"Hash the file must still have (from read_file or file_info); the write is refused if it changed since.")
	}
	return object(props, "path", "content")
}

func (fs *FS) writeFile(ctx context.Context, args writeArgs) (string, error) {
	if args.ExpectedHash != nil && !fs.hashes() {
		return "", capabilities.Retry("Unknown argument 'expected_hash'. Expected: path, content.")
	}
	rel, found, err := fs.resolveChange(args.Path)
	if err != nil {
		return "", err
	}
	exists, err := fs.checkWriteTarget(args.Path, rel, found)
	if err != nil {
		return "", err
	}
	if exists {
		if err := fs.requireKnown(args.Path, rel, args.ExpectedHash); err != nil {
			return "", err
		}
	} else {
		_, name := sandbox.Split(rel)
		if err := checkNewName(args.Path, name); err != nil {
			return "", err
		}
	}
	// watched: the write is checked against what the agent last saw of the
	// file, since the model gave no hash of its own (see watch.go).
	seen, _, watched := fs.lastSeen(rel)
	watched = watched && exists && args.ExpectedHash == nil && fs.changes.protect

	// What the change is checked against: the current hash when the model
	// gave one to compare, and the current content when a listener is shown
	// the diff (and approves exactly that). A direct call that only guards
	// what the agent saw leaves the check to the write's descriptor.
	emitting := capabilities.Emitting(ctx)
	var (
		snap     snapshot
		readable bool
		g        guard
	)
	if watched {
		g = guard{hash: seen, soft: true}
	}
	if exists && (args.ExpectedHash != nil || emitting) {
		snap, err = fs.readSnapshot(rel, false)
		switch {
		case err == nil:
			readable = true
		case errors.Is(err, syscall.EACCES) && args.ExpectedHash == nil:
			// Announced without content and written without a guard.
		case errors.Is(err, syscall.ENOENT):
			exists = false // deleted since: announced and guarded as new
		default:
			return "", writeOpenError(args.Path, rel, err, true)
		}
	}
	if args.ExpectedHash != nil && exists {
		if snap.hash != *args.ExpectedHash {
			return "", conflict(args.Path, *args.ExpectedHash, snap.hash)
		}
		g = guard{hash: snap.hash}
	}
	if watched && readable && snap.hash != seen {
		return "", fs.changedOnDisk(ctx, args.Path, rel, seen, snap.hash)
	}
	if emitting {
		var diff string
		var truncated bool
		switch {
		case !exists:
			g = guard{hash: absentHash}
			diff, truncated = unifiedDiff("", args.Content, rel)
		case !readable || snap.data == nil:
			g = guard{hash: snap.hash} // "" when unreadable: nothing to guard with
			diff, truncated = diffHeadersOnly(rel), true
		default:
			g = guard{hash: snap.hash}
			diff, truncated = unifiedDiff(string(text.Decode(snap.data)), args.Content, rel)
		}
		refusal, err := fs.announce(ctx, rel, OpWrite, diff, truncated)
		if err != nil || refusal != "" {
			return refusal, err
		}
		if err := fs.recheck(args.Path, rel); err != nil {
			return "", err
		}
	}

	hash, err := fs.writeTracked(args.Path, rel, []byte(args.Content), g, true)
	if err != nil {
		return "", fs.staleConflict(ctx, args.Path, rel, err, watched)
	}
	if err := fs.emit(ctx, &FileWrittenEvent{EventBase: fs.base(ctx, rel), ContentHash: hash}); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("Wrote %d chars (%d lines) to %s.", runeCount(args.Content), text.LineCount(args.Content), args.Path)
	if fs.hashes() {
		msg += " [hash:" + hash + "]"
	}
	return msg, nil
}

// checkWriteTarget refuses a target that exists but is not a regular file,
// or whose parent is missing or not a directory, and says whether it exists.
// What the resolution found of rel answers without a stat when it can: the
// write itself checks the target again under its lock.
func (fs *FS) checkWriteTarget(path, rel string, found sandbox.Found) (bool, error) {
	switch found {
	case sandbox.FoundFile:
		return true, nil
	case sandbox.FoundAbsent:
		return false, nil
	}
	st, err := fs.dir.Lstat(rel)
	switch {
	case err == nil && st.Mode().IsRegular():
		return true, nil
	case err == nil:
		return false, capabilities.Retry("Path %s exists and is not a regular file.", pyRepr(path))
	case errors.Is(err, syscall.ELOOP):
		return false, changedToSymlink(path)
	case !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR):
		return false, osError(err)
	}
	parent, _ := sandbox.Split(rel)
	if parent == "." {
		return false, nil // the root, held open: a directory
	}
	pst, err := fs.dir.Lstat(parent)
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return false, missingParent(rel)
	case errors.Is(err, syscall.ELOOP):
		return false, changedToSymlink(path)
	case err != nil:
		return false, osError(err)
	case !pst.IsDir():
		return false, capabilities.Retry("Path %s has a parent that is not a directory.", pyRepr(path))
	}
	return false, nil
}

package filesystem

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
)

type replacement struct {
	OldText *string `json:"old_text"`
	NewText *string `json:"new_text"`
}

type editArgs struct {
	Path         string        `json:"path"`
	OldText      *string       `json:"old_text,omitempty"`
	NewText      *string       `json:"new_text,omitempty"`
	Replacements []replacement `json:"replacements,omitempty"`
	ExpectedHash *string       `json:"expected_hash,omitempty"`
}

func newEditFile(fs *FS) capabilities.Tool {
	return &tool[editArgs]{
		name: ToolEditFile,
		description: "Replace exact text in a text file: one old_text/new_text pair, or a replacements list. " +
			"Each old_text must match exactly once; include surrounding lines to make it unique. Line endings are preserved.",
		params: sharedSchema(schemaKey{tool: ToolEditFile, hashes: fs.hashes()}, editFileSchema),
		call:   fs.editFile,
	}
}

func editFileSchema(k schemaKey) map[string]any {
	pair := map[string]any{
		"old_text": param("string", "Exact text to replace; it must occur exactly once."),
		"new_text": param("string", "Text to put in its place."),
	}
	props := map[string]any{
		"path":     param("string", "Path of the file, relative to the working directory."),
		"old_text": pair["old_text"],
		"new_text": pair["new_text"],
		"replacements": map[string]any{
			"type": "array",
			"description": "Several replacements applied in order, each to the result of the previous ones. " +
				"Use instead of old_text and new_text. Nothing is written unless every replacement matches exactly once.",
			"items": object(pair, "old_text", "new_text"),
		},
	}
	if k.hashes {
		props["expected_hash"] = param("string",
			"Hash the file must still have (from read_file or file_info); the edit is refused if it changed since.")
	}
	return object(props, "path")
}

func (fs *FS) editFile(ctx context.Context, args editArgs) (string, error) {
	if args.ExpectedHash != nil && !fs.hashes() {
		return "", capabilities.Retry("Unknown argument 'expected_hash'. Expected: path, old_text, new_text, replacements.")
	}
	reps, err := args.pairs()
	if err != nil {
		return "", err
	}
	rel, _, err := fs.resolveChange(args.Path)
	if err != nil {
		return "", err
	}
	snap, err := fs.readSnapshot(rel, true)
	if err != nil {
		return "", openError(args.Path, err, false)
	}
	if err := fs.requireKnown(args.Path, rel, args.ExpectedHash); err != nil {
		return "", err
	}
	if text.IsBinary(snap.data) {
		return "", capabilities.Retry("%s is a binary file; edit_file only edits text files.", args.Path)
	}
	old := snap.data
	if err := text.CheckStrict(old); err != nil {
		return "", &capabilities.RetryError{Message: err.Error()}
	}
	if args.ExpectedHash != nil && *args.ExpectedHash != snap.hash {
		return "", conflict(args.Path, *args.ExpectedHash, snap.hash)
	}
	// Without a hash from the model, the edit is checked against what the
	// agent last saw of the file (see watch.go).
	seen, _, watched := fs.lastSeen(rel)
	watched = watched && args.ExpectedHash == nil && fs.changes.protect
	if watched && snap.hash != seen {
		return "", fs.changedOnDisk(ctx, args.Path, rel, seen, snap.hash)
	}
	content, err := applyReplacements(old, reps, args.Path)
	if err != nil {
		return "", err
	}

	var diff string
	var truncated bool
	if capabilities.Emitting(ctx) {
		diff, truncated = editDiff(old, content, rel)
		refusal, err := fs.announce(ctx, rel, OpEdit, diff, truncated)
		if err != nil || refusal != "" {
			return refusal, err
		}
		if err := fs.recheck(args.Path, rel); err != nil {
			return "", err
		}
	}
	hash, err := fs.writeTracked(args.Path, rel, content, guard{hash: snap.hash}, false)
	if err != nil {
		return "", fs.staleConflict(ctx, args.Path, rel, err, watched)
	}
	ev := &FileEditedEvent{
		FileWrittenEvent: FileWrittenEvent{EventBase: fs.base(ctx, rel), ContentHash: hash},
		Diff:             diff,
		Truncated:        truncated,
	}
	if err := fs.emit(ctx, ev); err != nil {
		return "", err
	}
	if fs.hashes() {
		return fmt.Sprintf("Edited %s. [hash:%s]", args.Path, hash), nil
	}
	return fmt.Sprintf("Edited %s.", args.Path), nil
}

// pairs checks the form of the call: one old_text/new_text pair or a
// non-empty replacements list, not both.
func (a *editArgs) pairs() ([]replacement, error) {
	switch {
	case a.Replacements == nil:
		if a.OldText == nil || a.NewText == nil {
			return nil, capabilities.Retry("Provide old_text and new_text, or a non-empty replacements list.")
		}
		return []replacement{{a.OldText, a.NewText}}, nil
	case len(a.Replacements) == 0 || a.OldText != nil || a.NewText != nil:
		return nil, capabilities.Retry("Provide either old_text and new_text or a non-empty replacements list, not both.")
	}
	for i, r := range a.Replacements {
		if r.OldText == nil || r.NewText == nil {
			return nil, capabilities.Retry("replacement %d needs both old_text and new_text.", i+1)
		}
	}
	return a.Replacements, nil
}

// applyReplacements applies reps in order to old, each to the result of the
// ones before, and returns the new content. It fails, naming the
// replacement, unless each old_text occurs exactly once where it is applied.
//
// An edit of a big file takes the file's bytes and the new content's, no
// more: old is neither copied nor changed, and every replacement is made in
// place in one buffer, sized once for the longest the content can grow to.
func applyReplacements(old []byte, reps []replacement, path string) ([]byte, error) {
	growth := 0
	for _, r := range reps {
		growth += max(len(*r.NewText)-len(*r.OldText), 0)
	}
	var out []byte // nil until the first replacement, which copies old
	for i, r := range reps {
		label := "old_text"
		if len(reps) > 1 {
			label = fmt.Sprintf("replacement %d", i+1)
		}
		find, repl := []byte(*r.OldText), *r.NewText
		if len(find) == 0 {
			return nil, capabilities.Retry("%s is empty; old_text must be the exact text to replace.", label)
		}
		cur := out
		if cur == nil {
			cur = old
		}
		switch n := bytes.Count(cur, find); n {
		case 0:
			return nil, capabilities.Retry("%s not found in %s. No changes were written.", label, path)
		case 1:
			if out == nil {
				out = append(make([]byte, 0, len(old)+growth), old...)
			}
			out = replaceAt(out, bytes.Index(out, find), len(find), repl)
		default:
			return nil, capabilities.Retry("%s found %d times in %s. Include more surrounding context to make the match unique. "+
				"No changes were written.", label, n, path)
		}
	}
	return out, nil
}

// replaceAt replaces the n bytes of b at offset at with repl, in b's storage
// (applyReplacements reserves room for every growth).
func replaceAt(b []byte, at, n int, repl string) []byte {
	end := len(b)
	size := end - n + len(repl)
	if size > end {
		b = slices.Grow(b, size-end)[:size] // applyReplacements reserved the room: no copy
	}
	copy(b[at+len(repl):], b[at+n:end])
	copy(b[at:], repl)
	return b[:size]
}

// editDiff is unifiedDiff of the old and new content. A side too large to
// be diffed anyway (more than maxDiffFileBytes bytes is more than
// MaxDiffSourceChars characters) is not copied into a string for it.
func editDiff(old, new []byte, rel string) (string, bool) {
	if len(old) > maxDiffFileBytes || len(new) > maxDiffFileBytes {
		if bytes.Equal(old, new) {
			return "", false
		}
		return diffHeadersOnly(rel), true
	}
	return unifiedDiff(string(old), string(new), rel)
}

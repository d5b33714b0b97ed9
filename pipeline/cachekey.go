package pipeline

import (
	"slices"
	"strings"

	"github.com/agentspec/agentspec/spec"
)

// The cache key of a job is runtime.Run's: the spec's meaning, the model,
// the input and vars, the workspace and the bytes of the spec's
// input_globs. A job of a {glob: ...} fan-out works on the file its item
// names, whose path alone reaches the key through the input or vars: its
// content must reach it too, or an edited document replays the answer of
// the document as it was. The spec's own input_globs cannot say it without
// covering every item's file, which would run every job again when one
// document changes.

// keyItemFiles makes, for each glob fan-out step of p, the spec its item
// specs are copied from (Step.itemBase). It is called while p is loaded,
// before any run: a run writes into the spec it is given (its file made
// absolute, once), so item specs are copied from one that no run is given.
func keyItemFiles(p *Pipeline) {
	for _, s := range p.Steps {
		if s.ForEach != nil && s.ForEach.Glob != "" && s.Spec != nil {
			base := *s.Spec
			s.itemBase = &base
		}
	}
}

// itemGlobs is what the job of s for item adds to its spec's input_globs:
// for a glob fan-out, the file item names (a workspace-relative path),
// spelled as a pattern that matches it alone; nil for any other step.
func (s *Step) itemGlobs(item any) []string {
	file, ok := item.(string)
	if !ok || s.ForEach == nil || s.ForEach.Glob == "" {
		return nil
	}
	return []string{literalGlob(file)}
}

// itemSpec is the spec the job of the glob fan-out s runs here for the file
// item: s's spec with itemGlobs among its input_globs. (A job run by
// RunOptions.Exec gets them in Job.InputGlobs.)
func (s *Step) itemSpec(item any) *spec.Spec {
	base := s.itemBase
	if base == nil {
		base = s.Spec // a Step made in Go, not loaded
	}
	c := *base
	c.Workspace.InputGlobs = slices.Concat(base.Workspace.InputGlobs, s.itemGlobs(item))
	return &c
}

// literalGlob is a doublestar pattern that matches the path p and nothing
// else: every character with a meaning in a pattern escaped.
func literalGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

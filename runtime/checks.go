package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/spec"
)

// Workspace checks are the spec's declarative tests of the files a run must
// leave behind (workspace.expected_output_files and workspace.checks). They
// run after the model's final answer, between the output schema and the Go
// validators, and a failure goes back to the model in words that say what to
// fix, within the same answer attempts.
//
// Files are read through the sandbox on the workspace: a check never reads
// outside it, whatever symlinks the model left behind.

// maxCheckedFile bounds what a check reads. A file beyond it fails its check
// rather than exhausting memory.
const maxCheckedFile = 64 << 20

// Rules a CheckFailure names.
const (
	RuleExists     = "exists" // the file must exist (expected_output_files, or any check's file)
	RuleFile       = "file"   // the check's file must be a readable regular file
	RuleMinChars   = "min_chars"
	RuleMaxChars   = "max_chars"
	RuleContains   = "contains"
	RuleMatches    = "matches"
	RuleJSONSchema = "json_schema"
)

// CheckFailure is a workspace check that did not hold. Its Feedback is what
// the model is told; a run whose answer attempts run out with a check still
// failing ends with an error that wraps it.
type CheckFailure struct {
	File     string        // workspace-relative, as the spec writes it
	Rule     string        // one of the Rule constants
	Pos      spec.Position // where the check (or expected file) is in the spec; zero for a spec built in Go
	Feedback string        // for the model
}

func (f *CheckFailure) Error() string {
	where := ""
	if f.Pos.Line > 0 {
		where = " (" + f.Pos.String() + ")"
	}
	return fmt.Sprintf("check %s of %s failed%s: %s", f.Rule, f.File, where, f.Feedback)
}

// checkFeedback is the message sent back for failed checks: every failure,
// so that the model can fix them all in one attempt.
func checkFeedback(failures []*CheckFailure) string {
	msgs := make([]string, len(failures))
	for i, f := range failures {
		msgs[i] = f.Feedback
	}
	return strings.Join(msgs, "\n")
}

// checkSet is a spec's workspace checks, compiled once.
type checkSet struct {
	expected []workspaceFile
	checks   []fileCheck
}

// workspaceFile is a file a check names.
type workspaceFile struct {
	name string // as the spec writes it, for messages
	path string // cleaned, slash-separated, for the sandbox
	pos  spec.Position
}

type fileCheck struct {
	workspaceFile
	min, max *int
	contains string
	re       *regexp.Regexp
	schema   *jsonschema.Schema
	rawSch   string // the schema, compact, for the feedback
}

// compileChecks compiles the spec's workspace checks; nil when it has none.
// A path that leaves the workspace, a bad regular expression or schema is a
// spec problem, reported at its position.
func compileChecks(s *spec.Spec) (*checkSet, error) {
	ws := s.Workspace
	if len(ws.ExpectedOutputFiles) == 0 && len(ws.Checks) == 0 {
		return nil, nil
	}
	cs := &checkSet{}
	for i, name := range ws.ExpectedOutputFiles {
		ptr := fmt.Sprintf("/workspace/expected_output_files/%d", i)
		p, err := spec.WorkspacePath(name)
		if err != nil {
			return nil, specProblem(s, ptr, fmt.Sprintf("workspace.expected_output_files[%d]: %v", i, err))
		}
		cs.expected = append(cs.expected, workspaceFile{name: name, path: p, pos: s.Position(ptr)})
	}
	for i, c := range ws.Checks {
		ptr := fmt.Sprintf("/workspace/checks/%d", i)
		label := fmt.Sprintf("workspace.checks[%d]", i)
		p, err := spec.WorkspacePath(c.File)
		if err != nil {
			return nil, specProblem(s, ptr+"/file", fmt.Sprintf("%s.file: %v", label, err))
		}
		fc := fileCheck{
			workspaceFile: workspaceFile{name: c.File, path: p, pos: c.Pos},
			min:           c.MinChars,
			max:           c.MaxChars,
			contains:      c.Contains,
		}
		if c.Matches != "" {
			if fc.re, err = regexp.Compile(c.Matches); err != nil {
				return nil, specProblem(s, ptr+"/matches", fmt.Sprintf("%s.matches: %v", label, err))
			}
		}
		if len(bytes.TrimSpace(c.JSONSchema)) > 0 {
			if fc.schema, fc.rawSch, err = compileCheckSchema(fmt.Sprintf("agentspec://workspace/checks/%d/json_schema.json", i), c.JSONSchema); err != nil {
				return nil, specProblem(s, ptr+"/json_schema", fmt.Sprintf("%s.json_schema: %v", label, err))
			}
		}
		cs.checks = append(cs.checks, fc)
	}
	return cs, nil
}

// specProblem reports msg at the position of ptr in the spec file, or as a
// plain error for a spec built in Go.
func specProblem(s *spec.Spec, ptr, msg string) error {
	if s.File == "" {
		return errors.New(msg)
	}
	return spec.Errors{{Pos: s.Position(ptr), Msg: msg}}
}

func compileCheckSchema(url string, raw json.RawMessage) (*jsonschema.Schema, string, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, "", fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return nil, "", err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, "", fmt.Errorf("not a valid JSON Schema: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, "", err
	}
	return sch, compact.String(), nil
}

// run checks the workspace and returns every failure. The error is not the
// model's: the workspace could not be opened.
func (cs *checkSet) run(workspace string) ([]*CheckFailure, error) {
	if cs.present(workspace) {
		return nil, nil
	}
	var root fs.FS // the workspace, a symlink followed while it stays inside
	d, err := sandbox.OpenRoot(workspace)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// nothing was written: every file is missing
	case err != nil:
		return nil, fmt.Errorf("workspace checks: %w", err)
	default:
		defer d.Close()
		if root, err = d.FS(); err != nil {
			return nil, fmt.Errorf("workspace checks: %w", err)
		}
	}
	var failures []*CheckFailure
	missing := map[string]bool{} // a missing file is reported once
	for _, f := range cs.expected {
		if fail := f.stat(root, false); fail != nil {
			failures = append(failures, fail)
			missing[f.path] = true
		}
	}
	for _, c := range cs.checks {
		if missing[c.path] {
			continue
		}
		data, fail := c.read(root)
		if fail != nil {
			failures = append(failures, fail)
			missing[c.path] = true
			continue
		}
		failures = append(failures, c.judge(data)...)
	}
	return failures, nil
}

// present reports whether the checks can be seen to pass without opening
// the workspace: they are only expected files, each named by one component,
// and each is there and not a symlink. An lstat of that name in the workspace
// is then what the sandbox would find, and a batch's jobs spare the root's
// open, stat and close. Anything else goes the whole way, which words the
// failures.
func (cs *checkSet) present(workspace string) bool {
	if len(cs.checks) > 0 {
		return false
	}
	for _, f := range cs.expected {
		if strings.Contains(f.path, "/") {
			return false
		}
		st, err := os.Lstat(filepath.Join(workspace, f.path))
		if err != nil || st.Mode()&fs.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

func (f workspaceFile) fail(rule, format string, args ...any) *CheckFailure {
	return &CheckFailure{File: f.name, Rule: rule, Pos: f.pos, Feedback: fmt.Sprintf(format, args...)}
}

// stat checks that the file exists: as anything for an expected output
// file, as a regular file for a check that reads it.
func (f workspaceFile) stat(root fs.FS, regular bool) *CheckFailure {
	if root == nil {
		return f.fail(RuleExists, "%s does not exist. Write it with write_file.", f.name)
	}
	info, err := fs.Stat(root, f.path)
	if err != nil {
		// A symlink that dangles or leads out of the workspace is there but
		// cannot be followed; the sandbox refuses the latter.
		if l, lerr := fs.Lstat(root, f.path); lerr == nil && l.Mode()&fs.ModeSymlink != 0 {
			return f.fail(RuleFile, "%s is a symbolic link that leads nowhere or outside the workspace. Write %s as a regular file with write_file.", f.name, f.name)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return f.fail(RuleExists, "%s does not exist. Write it with write_file.", f.name)
		}
		return f.fail(RuleFile, "%s cannot be read (%v). Write it again with write_file.", f.name, unwrapPath(err))
	}
	switch {
	case !regular:
		return nil
	case info.IsDir():
		return f.fail(RuleFile, "%s is a directory, but it must be a file. Write the file %s with write_file.", f.name, f.name)
	case !info.Mode().IsRegular():
		return f.fail(RuleFile, "%s is not a regular file. Write it as a regular file with write_file.", f.name)
	case info.Size() > maxCheckedFile:
		return f.fail(RuleFile, "%s is %d bytes, more than the %d a check reads. Write a smaller file.", f.name, info.Size(), maxCheckedFile)
	}
	return nil
}

// unwrapPath drops the operation and path a *fs.PathError adds: the message
// goes to the model, which knows the path already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// read returns the content of the check's file.
func (c fileCheck) read(root fs.FS) ([]byte, *CheckFailure) {
	if fail := c.stat(root, true); fail != nil {
		return nil, fail
	}
	f, err := root.Open(c.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, c.fail(RuleExists, "%s does not exist. Write it with write_file.", c.name)
		}
		return nil, c.fail(RuleFile, "%s cannot be read (%v). Write it again with write_file.", c.name, unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCheckedFile+1))
	if err != nil {
		return nil, c.fail(RuleFile, "%s cannot be read (%v). Write it again with write_file.", c.name, unwrapPath(err))
	}
	if len(data) > maxCheckedFile {
		return nil, c.fail(RuleFile, "%s is more than the %d bytes a check reads. Write a smaller file.", c.name, maxCheckedFile)
	}
	return data, nil
}

// judge applies the check's rules to the file's content, every rule that
// fails giving its own failure.
func (c fileCheck) judge(data []byte) []*CheckFailure {
	var out []*CheckFailure
	if c.min != nil || c.max != nil {
		n := utf8.RuneCount(data)
		if c.min != nil && n < *c.min {
			out = append(out, c.fail(RuleMinChars, "%s is %s long; it must be at least %d. Expand it and write it again with write_file.",
				c.name, chars(n), *c.min))
		}
		if c.max != nil && n > *c.max {
			out = append(out, c.fail(RuleMaxChars, "%s is %s long; it must be at most %d. Shorten it and write it again with write_file.",
				c.name, chars(n), *c.max))
		}
	}
	if c.contains != "" && !bytes.Contains(data, []byte(c.contains)) {
		what := "add it"
		if strings.HasPrefix(strings.TrimSpace(c.contains), "#") {
			what = "add that section" // a Markdown heading
		}
		out = append(out, c.fail(RuleContains, "%s does not contain %q; %s.", c.name, c.contains, what))
	}
	if c.re != nil && !c.re.Match(data) {
		out = append(out, c.fail(RuleMatches, "%s does not match the regular expression %q; change it so that it does.", c.name, c.re.String()))
	}
	if c.schema != nil {
		if fail := c.judgeJSON(data); fail != nil {
			out = append(out, fail)
		}
	}
	return out
}

func (c fileCheck) judgeJSON(data []byte) *CheckFailure {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return c.fail(RuleJSONSchema, "%s is not valid JSON (%v). Write it again as JSON that satisfies this JSON Schema: %s",
			c.name, err, c.rawSch)
	}
	if err := c.schema.Validate(v); err != nil {
		return c.fail(RuleJSONSchema, "%s does not satisfy its JSON Schema: %s. Fix it and write it again with write_file. The schema is: %s",
			c.name, validationProblems(err), c.rawSch)
	}
	return nil
}

func chars(n int) string {
	if n == 1 {
		return "1 character"
	}
	return fmt.Sprintf("%d characters", n)
}

package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

func intp(n int) *int { return &n }

func ptr[T any](v T) *T { return &v }

// withFileSystem gives the spec a FileSystem over the workspace.
func withFileSystem(s *spec.Spec) {
	s.Capabilities = append(s.Capabilities, spec.Capability{Name: "FileSystem", Options: json.RawMessage(`{}`)})
}

// writeTurn is a turn that writes a file with FileSystem's write_file.
func writeTurn(path, content string) script.Turn {
	return script.Calls(script.Call("write_file", map[string]any{"path": path, "content": content}))
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// The feedback texts are what the model reads: each names the file, what is
// wrong, and what to do.
func TestCheckFeedback(t *testing.T) {
	t.Parallel()
	const schema = `{"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}`
	cases := []struct {
		name    string
		check   spec.Check
		files   map[string]string
		rules   []string
		message string // the feedback, all failures joined
	}{
		{
			name:    "long enough",
			check:   spec.Check{File: "review.md", MinChars: intp(5), MaxChars: intp(10)},
			files:   map[string]string{"review.md": "0123456789"},
			message: "",
		},
		{
			name:    "too short",
			check:   spec.Check{File: "review.md", MinChars: intp(800)},
			files:   map[string]string{"review.md": strings.Repeat("x", 312)},
			rules:   []string{RuleMinChars},
			message: "review.md is 312 characters long; it must be at least 800. Expand it and write it again with write_file.",
		},
		{
			name:    "too long",
			check:   spec.Check{File: "review.md", MaxChars: intp(3)},
			files:   map[string]string{"review.md": "four"},
			rules:   []string{RuleMaxChars},
			message: "review.md is 4 characters long; it must be at most 3. Shorten it and write it again with write_file.",
		},
		{
			name:  "characters are code points, not bytes",
			check: spec.Check{File: "é.md", MinChars: intp(3), MaxChars: intp(3)},
			files: map[string]string{"é.md": "déj"}, // 4 bytes
		},
		{
			name:    "a section is missing",
			check:   spec.Check{File: "review.md", Contains: "## Summary"},
			files:   map[string]string{"review.md": "# Review\n"},
			rules:   []string{RuleContains},
			message: `review.md does not contain "## Summary"; add that section.`,
		},
		{
			name:    "a phrase is missing",
			check:   spec.Check{File: "review.md", Contains: "Verdict:"},
			files:   map[string]string{"review.md": "# Review\n"},
			rules:   []string{RuleContains},
			message: `review.md does not contain "Verdict:"; add it.`,
		},
		{
			name:    "does not match",
			check:   spec.Check{File: "review.md", Matches: `(?m)^Verdict: (yes|no)$`},
			files:   map[string]string{"review.md": "Verdict: maybe\n"},
			rules:   []string{RuleMatches},
			message: `review.md does not match the regular expression "(?m)^Verdict: (yes|no)$"; change it so that it does.`,
		},
		{
			name:  "matches",
			check: spec.Check{File: "review.md", Matches: `(?m)^Verdict: (yes|no)$`},
			files: map[string]string{"review.md": "Notes\nVerdict: no\n"},
		},
		{
			name:    "not JSON",
			check:   spec.Check{File: "out.json", JSONSchema: json.RawMessage(schema)},
			files:   map[string]string{"out.json": "title: x"},
			rules:   []string{RuleJSONSchema},
			message: `out.json is not valid JSON (invalid character 'i' in literal true (expecting 'r')). Write it again as JSON that satisfies this JSON Schema: {"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`,
		},
		{
			name:  "JSON that breaks the schema",
			check: spec.Check{File: "out.json", JSONSchema: json.RawMessage(schema)},
			files: map[string]string{"out.json": `{"name": "x"}`},
			rules: []string{RuleJSONSchema},
			message: `out.json does not satisfy its JSON Schema: at '': missing property 'title'. Fix it and write it again with write_file. ` +
				`The schema is: {"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`,
		},
		{
			name:  "JSON that satisfies the schema",
			check: spec.Check{File: "out.json", JSONSchema: json.RawMessage(schema)},
			files: map[string]string{"out.json": `{"title": "x"}`},
		},
		{
			name:    "every failed rule is reported",
			check:   spec.Check{File: "review.md", MinChars: intp(100), Contains: "## Summary"},
			files:   map[string]string{"review.md": "short"},
			rules:   []string{RuleMinChars, RuleContains},
			message: "review.md is 5 characters long; it must be at least 100. Expand it and write it again with write_file.\nreview.md does not contain \"## Summary\"; add that section.",
		},
		{
			name:    "missing file",
			check:   spec.Check{File: "review.md", MinChars: intp(1)},
			rules:   []string{RuleExists},
			message: "review.md does not exist. Write it with write_file.",
		},
		{
			name:    "a directory",
			check:   spec.Check{File: "review.md", Contains: "x"},
			files:   map[string]string{"review.md/inner.txt": "x"},
			rules:   []string{RuleFile},
			message: "review.md is a directory, but it must be a file. Write the file review.md with write_file.",
		},
		{
			name:  "a path that needs cleaning",
			check: spec.Check{File: "./docs//review.md", Contains: "ok"},
			files: map[string]string{"docs/review.md": "ok"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			cs, err := compileChecks(newSpec(func(s *spec.Spec) { s.Workspace.Checks = []spec.Check{tc.check} }))
			require.NoError(t, err)
			failures, err := cs.run(dir)
			require.NoError(t, err)
			var rules []string
			for _, f := range failures {
				rules = append(rules, f.Rule)
				assert.Equal(t, tc.check.File, f.File)
			}
			assert.Equal(t, tc.rules, rules)
			assert.Equal(t, tc.message, checkFeedback(failures))
		})
	}
}

func TestCheckExpectedOutputFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"present.md": "x", "out/inner.txt": "x"})
	cs, err := compileChecks(newSpec(func(s *spec.Spec) {
		s.Workspace.ExpectedOutputFiles = []string{"present.md", "out", "missing.md"}
		// A check of a missing expected file adds no second message.
		s.Workspace.Checks = []spec.Check{{File: "missing.md", MinChars: intp(10)}, {File: "present.md", Contains: "x"}}
	}))
	require.NoError(t, err)
	failures, err := cs.run(dir)
	require.NoError(t, err)
	require.Len(t, failures, 1)
	assert.Equal(t, &CheckFailure{File: "missing.md", Rule: RuleExists, Feedback: "missing.md does not exist. Write it with write_file."}, failures[0])

	// A workspace that does not exist yet holds none of the files.
	failures, err = cs.run(filepath.Join(dir, "not-yet"))
	require.NoError(t, err)
	assert.Len(t, failures, 3)
}

func TestCheckNeverReadsOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "job")
	// The file outside would pass the check: a read through the link would
	// let it.
	writeFiles(t, parent, map[string]string{"secret.md": "## Summary\n", "job/.keep": ""})
	require.NoError(t, os.Symlink(filepath.Join(parent, "secret.md"), filepath.Join(dir, "review.md")))
	require.NoError(t, os.Symlink("../secret.md", filepath.Join(dir, "relative.md")))
	require.NoError(t, os.Symlink("nowhere.md", filepath.Join(dir, "dangling.md")))
	cs, err := compileChecks(newSpec(func(s *spec.Spec) {
		s.Workspace.ExpectedOutputFiles = []string{"dangling.md"}
		s.Workspace.Checks = []spec.Check{
			{File: "review.md", Contains: "## Summary"},
			{File: "relative.md", Contains: "## Summary"},
		}
	}))
	require.NoError(t, err)
	failures, err := cs.run(dir)
	require.NoError(t, err)
	require.Len(t, failures, 3)
	for _, f := range failures {
		assert.Equal(t, RuleFile, f.Rule, f.Feedback)
		assert.Equal(t, f.File+" is a symbolic link that leads nowhere or outside the workspace. Write "+f.File+" as a regular file with write_file.", f.Feedback)
		assert.NotContains(t, f.Feedback, parent, "no host path reaches the model")
	}
}

func TestCompileChecksRejectsPathsOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		ws   spec.Workspace
		want string
	}{
		"parent":        {ws: spec.Workspace{Checks: []spec.Check{{File: "../review.md"}}}, want: `workspace.checks[0].file: "../review.md" leaves the workspace`},
		"sneaky parent": {ws: spec.Workspace{Checks: []spec.Check{{File: "a/../../b"}}}, want: `"a/../../b" leaves the workspace`},
		"absolute":      {ws: spec.Workspace{ExpectedOutputFiles: []string{"/etc/passwd"}}, want: `workspace.expected_output_files[0]: "/etc/passwd" must be relative to the workspace`},
		"empty":         {ws: spec.Workspace{ExpectedOutputFiles: []string{" "}}, want: "the path is empty"},
		"bad regexp":    {ws: spec.Workspace{Checks: []spec.Check{{File: "a", Matches: "("}}}, want: "workspace.checks[0].matches: error parsing regexp"},
		"bad schema":    {ws: spec.Workspace{Checks: []spec.Check{{File: "a", JSONSchema: json.RawMessage(`{"type": 3}`)}}}, want: "workspace.checks[0].json_schema: not a valid JSON Schema"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := script.New()
			_, err := runScript(t, newSpec(func(s *spec.Spec) { s.Workspace = tc.ws }), m, nil)
			require.ErrorContains(t, err, tc.want)
			assert.Empty(t, m.Requests(), "nothing is run")
		})
	}
}

func TestCheckPathsOutsideTheWorkspaceFailToLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	_, err := (&spec.Loader{}).Load(path, []byte("version: 1\nmodel: script:x.yaml\nworkspace:\n  checks:\n    - file: ../out.md\n"))
	var errs spec.Errors
	require.ErrorAs(t, err, &errs, "the loader refuses it before any run")
	assert.Equal(t, path+`:5:13: workspace.checks[0].file: "../out.md" leaves the workspace`, err.Error())
}

// Runs: a failed check goes back to the model, which fixes the file.
func TestRunChecksFeedback(t *testing.T) {
	t.Parallel()
	checked := func(s *spec.Spec) {
		withFileSystem(s)
		s.Workspace.ExpectedOutputFiles = []string{"review.md"}
		s.Workspace.Checks = []spec.Check{{File: "review.md", MinChars: intp(40), Contains: "## Summary"}}
	}
	long := "## Summary\n" + strings.Repeat("All good. ", 4)

	t.Run("too short, then fixed", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		m := script.New(
			writeTurn("review.md", "## Summary\nok"),
			script.Say("Written."),
			writeTurn("review.md", long),
			script.Say("Expanded."),
		)
		rec := &recorder{}
		res, err := Run(context.Background(), newSpec(checked), WithModel(m, DialectOpenAI), WithWorkspace(ws), WithListener(rec.listen))
		require.NoError(t, err)
		assert.Equal(t, "Expanded.", res.Output)

		reqs := m.Requests()
		require.Len(t, reqs, 4)
		want := retryAnswerPrefix + "review.md is 13 characters long; it must be at least 40. Expand it and write it again with write_file."
		assert.Equal(t, want, lastText(t, reqs[2].Messages))
		retries := eventsOf[Retry](rec)
		require.Len(t, retries, 1)
		assert.Equal(t, Retry{Type: RetryCheck, Attempt: 1, Limit: MaxAttempts, Message: strings.TrimPrefix(want, retryAnswerPrefix)}, retries[0])
		written, err := os.ReadFile(filepath.Join(ws, "review.md"))
		require.NoError(t, err)
		assert.Equal(t, long, string(written))
	})

	t.Run("missing expected output", func(t *testing.T) {
		t.Parallel()
		write := writeTurn("review.md", long)
		write.Expect = &script.Expect{MessageContains: "review.md does not exist. Write it with write_file."}
		m := script.New(script.Say("Done, I think."), write, script.Say("Now it is written."))
		res, err := Run(context.Background(), newSpec(checked), WithModel(m, DialectOpenAI), WithWorkspace(t.TempDir()))
		require.NoError(t, err)
		assert.Equal(t, "Now it is written.", res.Output)
	})

	t.Run("exhausted attempts name the check", func(t *testing.T) {
		t.Parallel()
		turns := []script.Turn{}
		for range MaxAttempts {
			turns = append(turns, writeTurn("review.md", "## Summary\nshort"), script.Say("Written."))
		}
		m := script.New(turns...)
		res, err := Run(context.Background(), newSpec(checked), WithModel(m, DialectOpenAI), WithWorkspace(t.TempDir()))
		require.ErrorIs(t, err, ErrInvalidAnswer)
		var failure *CheckFailure
		require.ErrorAs(t, err, &failure)
		assert.Equal(t, RuleMinChars, failure.Rule)
		assert.Equal(t, "review.md", failure.File)
		assert.Equal(t, "no valid final answer after 3 attempts: check min_chars of review.md failed: "+
			"review.md is 16 characters long; it must be at least 40. Expand it and write it again with write_file.", err.Error())
		assert.Equal(t, "Written.", res.Output, "the last answer is still reported")
		assert.Zero(t, m.Remaining())
	})

	t.Run("validators run after the checks", func(t *testing.T) {
		t.Parallel()
		var validated []string
		v := func(_ context.Context, r *Result) error {
			validated = append(validated, r.Output)
			return nil
		}
		m := script.New(script.Say("Nothing written."), writeTurn("review.md", long), script.Say("Written."))
		_, err := Run(context.Background(), newSpec(checked), WithModel(m, DialectOpenAI), WithWorkspace(t.TempDir()), WithValidator(v))
		require.NoError(t, err)
		assert.Equal(t, []string{"Written."}, validated, "an answer the checks reject never reaches the validators")
	})

	t.Run("the output schema comes first", func(t *testing.T) {
		t.Parallel()
		m := script.New(
			writeTurn("review.md", long),
			script.Say("not json"),
			script.Turn{Text: `{"name": "Ada", "age": 36}`, Expect: &script.Expect{MessageContains: "the response contains no JSON value"}},
		)
		s := newSpec(checked, func(s *spec.Spec) { s.OutputSchema = json.RawMessage(personSchema) })
		res, err := Run(context.Background(), s, WithModel(m, DialectOpenAI), WithWorkspace(t.TempDir()))
		require.NoError(t, err)
		assert.JSONEq(t, `{"name": "Ada", "age": 36}`, string(res.JSON))
	})
}

func TestExhaustedErrorNamesTheChecks(t *testing.T) {
	t.Parallel()
	one := &CheckFailure{File: "review.md", Rule: RuleMinChars, Pos: spec.Position{File: "agent.yaml", Line: 9, Col: 7}, Feedback: "review.md is 3 characters long; it must be at least 9. Expand it and write it again with write_file."}
	two := &CheckFailure{File: "review.md", Rule: RuleContains, Feedback: `review.md does not contain "x"; add it.`}
	cases := []struct {
		rej  rejection
		want string
	}{
		{rejection{kind: RetryValidation, feedback: "name report.md"}, "no valid final answer after 3 attempts: name report.md"},
		{rejection{kind: RetryCheck, checks: []*CheckFailure{one}}, "no valid final answer after 3 attempts: check min_chars of review.md failed (agent.yaml:9:7): " + one.Feedback},
		{rejection{kind: RetryCheck, checks: []*CheckFailure{two, one}}, "no valid final answer after 3 attempts: check contains of review.md failed: " + two.Feedback + " (and 1 more failed check)"},
		{rejection{kind: RetryCheck, checks: []*CheckFailure{two, one, one}}, "no valid final answer after 3 attempts: check contains of review.md failed: " + two.Feedback + " (and 2 more failed checks)"},
	}
	for _, tc := range cases {
		err := tc.rej.exhausted(3)
		assert.Equal(t, tc.want, err.Error())
		assert.ErrorIs(t, err, ErrInvalidAnswer)
		if len(tc.rej.checks) > 0 {
			var f *CheckFailure
			require.ErrorAs(t, err, &f)
			assert.Same(t, tc.rej.checks[0], f)
		}
	}
}

package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/cache"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// cachedJob is a spec that caches in its own directory, reads notes/*.md and
// must leave summary.md behind, and a workspace holding notes/a.md.
type cachedJob struct {
	spec      *spec.Spec
	cacheDir  string
	workspace string
}

func newCachedJob(t *testing.T, edits ...func(*spec.Spec)) cachedJob {
	t.Helper()
	j := cachedJob{cacheDir: t.TempDir(), workspace: t.TempDir()}
	j.spec = newSpec(append([]func(*spec.Spec){withFileSystem, func(s *spec.Spec) {
		s.Model = "test:model"
		s.Cache = &spec.Cache{Dir: j.cacheDir}
		s.Workspace.InputGlobs = []string{"notes/*.md"}
		s.Workspace.ExpectedOutputFiles = []string{"summary.md"}
	}}, edits...)...)
	writeFiles(t, j.workspace, map[string]string{"notes/a.md": "first notes\n"})
	return j
}

// summarize is a script that writes summary.md and answers.
func summarize(answer string) *script.Model {
	return script.New(writeTurn("summary.md", "A summary.\n"), script.Say(answer))
}

// unreachable is a model that fails the run if it is called at all.
func unreachable() *script.Model { return script.New() }

// run runs the job with m. A model given in Go does not turn on the spec's
// cache by itself, so the spec's cache directory is named with WithCache.
func (j cachedJob) run(t *testing.T, m *script.Model, opts ...Option) (*Result, *recorder, error) {
	t.Helper()
	rec := &recorder{}
	all := []Option{WithModel(m, DialectOpenAI), WithWorkspace(j.workspace), WithListener(rec.listen)}
	if j.spec.Cache != nil {
		all = append(all, WithCache(mustCache(t, j.cacheDir)))
	}
	all = append(all, opts...)
	res, err := Run(context.Background(), j.spec, all...)
	return res, rec, err
}

func TestRunCacheHitDoesNotCallTheModel(t *testing.T) {
	t.Parallel()
	j := newCachedJob(t, func(s *spec.Spec) { s.OutputSchema = json.RawMessage(personSchema) })
	m := script.New(writeTurn("summary.md", "A summary.\n"), script.Say(`{"name": "Ada", "age": 36}`))
	first, rec, err := j.run(t, m)
	require.NoError(t, err)
	assert.False(t, first.Cached)
	require.NotEmpty(t, first.CacheKey)
	assert.Empty(t, eventsOf[CacheHit](rec))

	m = unreachable()
	res, rec, err := j.run(t, m)
	require.NoError(t, err)
	assert.Empty(t, m.Requests(), "a hit never reaches the model")
	assert.True(t, res.Cached)
	assert.Equal(t, first.Output, res.Output)
	assert.JSONEq(t, `{"name":"Ada","age":36}`, string(res.JSON))
	assert.Equal(t, first.CacheKey, res.CacheKey)
	assert.Equal(t, Usage{}, withoutElapsed(res.Usage), "a hit consumes nothing")
	assert.Nil(t, res.Transcript)
	hits := eventsOf[CacheHit](rec)
	require.Len(t, hits, 1)
	assert.Equal(t, first.CacheKey, hits[0].Key)
	assert.False(t, hits[0].Created.IsZero())
	assert.Equal(t, []string{KindCacheHit, KindRunEnd}, rec.kinds(), "nothing else happens")
	assert.Equal(t, RunEnd{OK: true, Cached: true, Usage: res.Usage}, eventsOf[RunEnd](rec)[0])
}

func TestRunCacheMisses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		change  func(t *testing.T, j *cachedJob) []Option // between the two runs
		warning string                                    // a CacheWarning the second run reports
	}{
		{name: "an input file changed", change: func(t *testing.T, j *cachedJob) []Option {
			writeFiles(t, j.workspace, map[string]string{"notes/a.md": "second notes\n"})
			return nil
		}},
		{name: "an input file appeared", change: func(t *testing.T, j *cachedJob) []Option {
			writeFiles(t, j.workspace, map[string]string{"notes/b.md": "more\n"})
			return nil
		}},
		{name: "an expected output is missing", change: func(t *testing.T, j *cachedJob) []Option {
			require.NoError(t, os.Remove(filepath.Join(j.workspace, "summary.md")))
			return nil
		}, warning: "expected output files are missing: summary.md"},
		{name: "another input", change: func(*testing.T, *cachedJob) []Option { return []Option{WithInput("other")} }},
		{name: "other variables", change: func(*testing.T, *cachedJob) []Option { return []Option{WithVars(map[string]string{"a": "b"})} }},
		{name: "another spec", change: func(_ *testing.T, j *cachedJob) []Option {
			j.spec.Instructions = []string{"Something else."}
			return nil
		}},
		{name: "another workspace with the same files", change: func(t *testing.T, j *cachedJob) []Option {
			j.workspace = t.TempDir()
			writeFiles(t, j.workspace, map[string]string{"notes/a.md": "first notes\n"})
			return nil
		}},
		{name: "a corrupt entry", change: func(t *testing.T, j *cachedJob) []Option {
			log, data := onlyEntry(t, j.cacheDir)
			cut := bytes.Index(data, []byte(`"output":`)) + 10
			require.NoError(t, os.WriteFile(log, data[:cut], 0o600))
			f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte("\n")) // as the next record would begin
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return nil
		}, warning: "corrupt cache entry"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := newCachedJob(t)
			_, _, err := j.run(t, summarize("first"))
			require.NoError(t, err)
			opts := tc.change(t, &j)

			m := summarize("second")
			res, rec, err := j.run(t, m, opts...)
			require.NoError(t, err)
			assert.False(t, res.Cached)
			assert.Equal(t, "second", res.Output)
			assert.Len(t, m.Requests(), 2, "the model ran")
			assert.Empty(t, eventsOf[CacheHit](rec))
			warnings := eventsOf[CacheWarning](rec)
			if tc.warning == "" {
				assert.Empty(t, warnings)
			} else {
				require.Len(t, warnings, 1)
				assert.Contains(t, warnings[0].Message, tc.warning)
			}

			// The second run was stored in its turn.
			res, _, err = j.run(t, unreachable(), opts...)
			require.NoError(t, err)
			assert.True(t, res.Cached)
			assert.Equal(t, "second", res.Output)
		})
	}
}

// The key is computed again after the run: a run that edits its own input is
// found by a later run over the edited file, not by one over the original.
func TestRunCacheKeyAfterTheRun(t *testing.T) {
	t.Parallel()
	j := newCachedJob(t)
	m := script.New(
		script.Calls(
			script.Call("write_file", map[string]any{"path": "notes/a.md", "content": "edited notes\n"}),
			script.Call("write_file", map[string]any{"path": "summary.md", "content": "A summary.\n"}),
		),
		script.Say("edited"),
	)
	_, _, err := j.run(t, m)
	require.NoError(t, err)

	res, _, err := j.run(t, unreachable())
	require.NoError(t, err, "the run over the edited notes is a hit")
	assert.True(t, res.Cached)
	assert.Equal(t, "edited", res.Output)

	writeFiles(t, j.workspace, map[string]string{"notes/a.md": "first notes\n"})
	again := summarize("over the original")
	res, _, err = j.run(t, again)
	require.NoError(t, err)
	assert.False(t, res.Cached, "the original notes were never stored")
	assert.Len(t, again.Requests(), 2)
}

func TestRunCacheNeverStoresFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]*script.Model{
		"model error": script.New(script.Turn{Error: "overloaded"}),
		"checks never pass": script.New(
			script.Say("no file"), script.Say("still no file"), script.Say("none"),
		),
	}
	for name, failing := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := newCachedJob(t)
			_, _, err := j.run(t, failing)
			require.Error(t, err)
			entries, err := filepath.Glob(filepath.Join(j.cacheDir, "entries", "*"))
			require.NoError(t, err)
			assert.Empty(t, entries)

			m := summarize("ok")
			res, _, err := j.run(t, m)
			require.NoError(t, err)
			assert.False(t, res.Cached)
			assert.Len(t, m.Requests(), 2)
		})
	}
}

func TestRunWithoutCache(t *testing.T) {
	t.Parallel()
	j := newCachedJob(t)
	_, _, err := j.run(t, summarize("stored"))
	require.NoError(t, err)

	m := summarize("fresh")
	res, _, err := j.run(t, m, WithoutCache())
	require.NoError(t, err)
	assert.False(t, res.Cached)
	assert.Empty(t, res.CacheKey)
	assert.Equal(t, "fresh", res.Output)

	// WithCache(nil) is WithoutCache, and the last option wins.
	m = summarize("fresh again")
	res, _, err = j.run(t, m, WithCache(nil))
	require.NoError(t, err)
	assert.False(t, res.Cached)
	res, _, err = j.run(t, unreachable(), WithoutCache(), WithCache(mustCache(t, j.cacheDir)))
	require.NoError(t, err)
	assert.True(t, res.Cached)
	assert.Equal(t, "stored", res.Output)
}

func mustCache(t *testing.T, dir string) *cache.Cache {
	t.Helper()
	c, err := cache.New(dir)
	require.NoError(t, err)
	return c
}

func TestRunWithCacheOverridesTheSpec(t *testing.T) {
	t.Parallel()
	j := newCachedJob(t, func(s *spec.Spec) { s.Cache = nil })
	dir := t.TempDir()
	opt := WithCache(mustCache(t, dir))
	_, _, err := j.run(t, summarize("stored"), opt)
	require.NoError(t, err)
	res, _, err := j.run(t, unreachable(), opt)
	require.NoError(t, err)
	assert.True(t, res.Cached)
	st, err := mustCache(t, dir).Stats(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, st.Entries)

	m := summarize("uncached")
	_, _, err = j.run(t, m)
	require.NoError(t, err, "without the option the spec's setting holds: no cache")
	assert.Len(t, m.Requests(), 2)
}

// A loaded spec keys on its document, and its relative cache directory is
// the spec file's neighbour.
func TestRunCacheFromSpecFile(t *testing.T) {
	t.Parallel()
	specDir, workspace := t.TempDir(), t.TempDir()
	writeFiles(t, specDir, map[string]string{
		"agent.yaml": "version: 1\nmodel: script:turns.yaml\ninstructions: Say hello.\ncache: {dir: .cache}\n",
		"turns.yaml": "turns:\n  - text: hello\n",
	})
	s, err := spec.LoadFile(filepath.Join(specDir, "agent.yaml"))
	require.NoError(t, err)
	require.NotNil(t, s.Document)

	res, err := Run(context.Background(), s, WithWorkspace(workspace))
	require.NoError(t, err)
	assert.False(t, res.Cached)
	assert.FileExists(t, filepath.Join(specDir, ".cache", "CACHEDIR.TAG"))

	// The script gives another answer now: its content is part of the key.
	writeFiles(t, specDir, map[string]string{"turns.yaml": "turns:\n  - text: changed\n"})
	res, err = Run(context.Background(), s, WithWorkspace(workspace))
	require.NoError(t, err)
	assert.False(t, res.Cached)
	assert.Equal(t, "changed", res.Output)
	res, err = Run(context.Background(), s, WithWorkspace(workspace))
	require.NoError(t, err)
	assert.True(t, res.Cached)
	assert.Equal(t, "changed", res.Output)

	// Comments and formatting are not meaning.
	writeFiles(t, specDir, map[string]string{"agent.yaml": "# a comment\nversion: 1\nmodel: script:turns.yaml\ninstructions: 'Say hello.'\ncache:\n  dir: .cache\n"})
	s, err = spec.LoadFile(filepath.Join(specDir, "agent.yaml"))
	require.NoError(t, err)
	res, err = Run(context.Background(), s, WithWorkspace(workspace))
	require.NoError(t, err)
	assert.True(t, res.Cached)
}

// A program may change a loaded spec before it runs it: the key follows the
// spec as it is run, not the file as it was loaded, and still not the
// file's comments, which move the positions its warnings carry.
func TestRunCacheKeysTheSpecAsRun(t *testing.T) {
	t.Parallel()
	specDir, workspace := t.TempDir(), t.TempDir()
	const agent = "version: 1\nmodel: script:turns.yaml\ninstructions: Say hello.\ninstrument: true\ncache: {dir: .cache}\n"
	writeFiles(t, specDir, map[string]string{"agent.yaml": agent, "turns.yaml": "turns:\n  - text: hello\n"})
	load := func() *spec.Spec {
		t.Helper()
		s, err := spec.LoadFile(filepath.Join(specDir, "agent.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, s.Warnings, "instrument is accepted and not acted on")
		return s
	}
	run := func(s *spec.Spec) bool {
		t.Helper()
		res, err := Run(context.Background(), s, WithWorkspace(workspace))
		require.NoError(t, err)
		return res.Cached
	}
	s := load()
	require.False(t, run(s))
	require.True(t, run(s))

	edits := map[string]func(*spec.Spec){
		"instructions":    func(s *spec.Spec) { s.Instructions = []string{"Say goodbye."} },
		"model_settings":  func(s *spec.Spec) { s.ModelSettings.MaxTokens = 5 },
		"retries":         func(s *spec.Spec) { s.Retries = 1 },
		"max_tool_rounds": func(s *spec.Spec) { s.MaxToolRounds = 3 },
	}
	for name, edit := range edits {
		s := load()
		edit(s)
		assert.False(t, run(s), "%s changed after the spec was loaded: the stored answer is not this spec's", name)
	}

	writeFiles(t, specDir, map[string]string{"agent.yaml": "# a comment\n\n" + agent})
	assert.True(t, run(load()), "comments are not meaning, nor the positions of warnings they move")
}

// cache: true is the default directory, which the environment can move. The
// test sets an environment variable, so it does not run in parallel.
func TestRunCacheTrueUsesTheDefaultDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(cache.EnvDir, dir)
	turns := filepath.Join(t.TempDir(), "turns.yaml")
	writeFiles(t, filepath.Dir(turns), map[string]string{"turns.yaml": summarizeTurns})
	j := newCachedJob(t, func(s *spec.Spec) {
		s.Cache = &spec.Cache{}
		s.Model = "script:" + turns
	})
	_, err := Run(context.Background(), j.spec, WithWorkspace(j.workspace))
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "CACHEDIR.TAG"))
	res, err := Run(context.Background(), j.spec, WithWorkspace(j.workspace))
	require.NoError(t, err)
	assert.True(t, res.Cached)
}

// summarizeTurns is summarize as a script file.
const summarizeTurns = `
turns:
  - tool_calls: [{name: write_file, arguments: {path: summary.md, content: "A summary.\n"}}]
  - text: stored
`

// The key cannot see a model or capabilities given in Go: with either, the
// spec's cache key is ignored unless WithCache says otherwise.
func TestRunGivenModelOrCapabilitiesBypassTheSpecCache(t *testing.T) {
	t.Parallel()
	turns := filepath.Join(t.TempDir(), "turns.yaml")
	writeFiles(t, filepath.Dir(turns), map[string]string{"turns.yaml": summarizeTurns})
	j := newCachedJob(t, func(s *spec.Spec) { s.Model = "script:" + turns })
	res, err := Run(context.Background(), j.spec, WithWorkspace(j.workspace))
	require.NoError(t, err)
	require.NotEmpty(t, res.CacheKey, "the spec's own model fills the spec's cache")

	cases := map[string][]Option{
		"WithModel":        {WithModel(summarize("fresh"), DialectOpenAI)},
		"WithCapabilities": {WithCapabilities(toolCaps{&echoTool{name: "echo"}})},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) { // not parallel: one workspace
			rec := &recorder{}
			res, err := Run(context.Background(), j.spec, append(opts, WithWorkspace(j.workspace), WithListener(rec.listen))...)
			require.NoError(t, err)
			assert.False(t, res.Cached)
			assert.Empty(t, res.CacheKey, "nothing stored")
			assert.Empty(t, eventsOf[CacheHit](rec))
			assert.Positive(t, res.Usage.Requests)
		})
	}

	withCache := WithCache(mustCache(t, j.cacheDir))
	res, err = Run(context.Background(), j.spec, WithModel(summarize("given"), DialectOpenAI), WithWorkspace(j.workspace), withCache)
	require.NoError(t, err)
	assert.False(t, res.Cached, "the spec's reference, without its script's content, is another key")
	res, err = Run(context.Background(), j.spec, WithModel(unreachable(), DialectOpenAI), WithWorkspace(j.workspace), withCache)
	require.NoError(t, err)
	assert.True(t, res.Cached, "WithCache vouches for the model")
	assert.Equal(t, "given", res.Output)
}

// onlyEntry returns the one log of a cache directory and its content, which
// must be one record: a line break, the key, a checksum and the entry's JSON.
func onlyEntry(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "entries", "*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	data, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	require.Equal(t, 1, bytes.Count(bytes.Trim(data, "\n"), []byte("\n"))+1, "one record")
	return logs[0], data
}

// rewriteEntry rewrites the one entry of a cache directory, as a file of
// its own where earlier versions wrote entries (and a lookup still reads
// them), so that the test need not know how the cache's logs check theirs.
func rewriteEntry(t *testing.T, dir string, edit func(e map[string]any)) {
	t.Helper()
	log, data := onlyEntry(t, dir)
	fields := bytes.SplitN(bytes.Trim(data, "\n"), []byte(" "), 3)
	key := string(fields[0])
	var e map[string]any
	require.NoError(t, json.Unmarshal(fields[2], &e))
	edit(e)
	data, err := json.Marshal(e)
	require.NoError(t, err)
	require.NoError(t, os.Remove(log))
	p := filepath.Join(dir, "entries", key[:2], key+".json")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
	require.NoError(t, os.WriteFile(p, data, 0o600))
}

// An entry is replayed only if its answer passes what a fresh answer must:
// the output schema (its JSON being the answer's), the workspace checks and
// the validators. One that fails is a miss, said in a CacheWarning, and the
// run asks the model.
func TestRunCacheReplaysOnlyWhatPasses(t *testing.T) {
	t.Parallel()
	const answer = `{"name": "Ada", "age": 36}`
	withSchema := func(s *spec.Spec) { s.OutputSchema = json.RawMessage(personSchema) }
	withCheck := func(s *spec.Spec) {
		s.Workspace.Checks = []spec.Check{{File: "summary.md", Contains: "A summary."}}
	}
	cases := []struct {
		name    string
		edits   []func(*spec.Spec)
		change  func(t *testing.T, j *cachedJob) []Option
		warning string
	}{
		{name: "an answer the schema refuses", edits: []func(*spec.Spec){withSchema},
			change: func(t *testing.T, j *cachedJob) []Option {
				rewriteEntry(t, j.cacheDir, func(e map[string]any) { e["output"] = `{"name": "Mallory"}` })
				return nil
			}, warning: "refused, its answer does not pass the output_schema: the response does not match the schema: "},
		{name: "JSON that is not the answer's", edits: []func(*spec.Spec){withSchema},
			change: func(t *testing.T, j *cachedJob) []Option {
				rewriteEntry(t, j.cacheDir, func(e map[string]any) { e["json"] = map[string]any{"name": "Mallory", "age": 1} })
				return nil
			}, warning: "refused, its JSON output is not the JSON of its answer; running again"},
		{name: "JSON without a schema",
			change: func(t *testing.T, j *cachedJob) []Option {
				rewriteEntry(t, j.cacheDir, func(e map[string]any) { e["json"] = map[string]any{"name": "Mallory"} })
				return nil
			}, warning: "refused, it carries a JSON output and the spec has no output_schema; running again"},
		{name: "a workspace that fails its checks", edits: []func(*spec.Spec){withCheck},
			change: func(t *testing.T, j *cachedJob) []Option {
				writeFiles(t, j.workspace, map[string]string{"summary.md": "Something else.\n"})
				return nil
			}, warning: "refused, the workspace fails the spec's checks: check contains of summary.md failed"},
		{name: "a validator's objection",
			change: func(*testing.T, *cachedJob) []Option {
				return []Option{WithValidator(func(_ context.Context, r *Result) error {
					if r.Cached {
						return Feedback("not from the cache")
					}
					return nil
				})}
			}, warning: "refused, a validator rejects its answer: not from the cache; running again"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := newCachedJob(t, tc.edits...)
			_, _, err := j.run(t, summarize(answer))
			require.NoError(t, err)
			opts := tc.change(t, &j)

			m := summarize(answer)
			res, rec, err := j.run(t, m, opts...)
			require.NoError(t, err)
			assert.False(t, res.Cached, "not replayed")
			assert.Len(t, m.Requests(), 2, "the model ran")
			assert.Empty(t, eventsOf[CacheHit](rec))
			warnings := eventsOf[CacheWarning](rec)
			require.Len(t, warnings, 1)
			assert.Regexp(t, `^cache entry [0-9a-f]{12}: `, warnings[0].Message)
			assert.Contains(t, warnings[0].Message, tc.warning)
			if j.spec.OutputSchema != nil {
				assert.JSONEq(t, answer, string(res.JSON))
			}
		})
	}
}

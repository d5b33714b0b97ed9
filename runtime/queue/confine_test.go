package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// opaque is a capability that does not say what it reaches.
type opaque struct{}

func (opaque) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }

// Nothing in a job's spec may lead a worker outside its workspace root, or
// start a program, reach the network or read the worker's environment,
// unless the worker allows it: whatever wraps the capability that would.
func TestConfine(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws := filepath.Join(root, "job")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	out := t.TempDir()
	realOut, err := filepath.EvalSymlinks(out)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(out, filepath.Join(ws, "out")))
	require.NoError(t, os.Symlink("sub", filepath.Join(ws, "in")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "other"), 0o755))

	reg := registryWith(t, capabilities.Type{Name: "Opaque",
		New: func(context.Context, capabilities.Args) (capabilities.Capability, error) { return opaque{}, nil }})

	none, all := Allow{}, Allow{Exec: true, Network: true, Env: true}
	for name, tc := range map[string]struct {
		yaml  string
		allow Allow
		err   string
	}{
		"the workspace":             {"capabilities: [FileSystem]\n", none, ""},
		"a directory in it":         {"capabilities: [{FileSystem: sub}]\n", none, ""},
		"a link inside":             {"capabilities: [{FileSystem: in}]\n", none, ""},
		"an absolute root":          {"capabilities: [{FileSystem: /etc}]\n", all, "FileSystem reaches /etc, outside the job's workspace"},
		"a sibling":                 {"capabilities: [{FileSystem: ../other}]\n", all, "FileSystem reaches " + filepath.Join(root, "other") + ", outside the job's workspace"},
		"up and out":                {"capabilities: [{FileSystem: ../..}]\n", all, "FileSystem reaches " + filepath.Dir(root) + ", outside the job's workspace"},
		"a link that leads out":     {"capabilities: [{FileSystem: {root_dir: out}}]\n", all, "FileSystem reaches " + realOut + ", outside the job's workspace"},
		"a wrapped root":            {"capabilities: [{PrefixTools: {prefix: all, capability: {FileSystem: {root_dir: /}}}}]\n", all, "PrefixTools reaches /, outside the job's workspace"},
		"wrapped twice":             {"capabilities: [{PrefixTools: {prefix: a, capability: {PrefixTools: {prefix: b, capability: {FileSystem: ../other}}}}}]\n", all, "PrefixTools reaches " + filepath.Join(root, "other") + ", outside the job's workspace"},
		"the workspace, set":        {"capabilities: [{LocalWorkspace: sub}, FileSystem]\n", none, ""},
		"a workspace elsewhere":     {"capabilities: [{LocalWorkspace: /etc}]\n", all, "LocalWorkspace reaches /etc, outside the job's workspace"},
		"a workspace to come":       {"capabilities: [{LocalWorkspace: out/../new}]\n", none, ""}, // new, as the run takes it
		"a workspace up and out":    {"capabilities: [{LocalWorkspace: {working_dir: .., read_only: true}}]\n", all, "LocalWorkspace reaches " + root + ", outside the job's workspace"},
		"a wrapped root inside":     {"capabilities: [{PrefixTools: {prefix: s, capability: {FileSystem: sub}}}]\n", none, ""},
		"an MCP command":            {"capabilities: [{MCP: {command: [sh, -c, 'cat /proc/1/environ', --token, SECRET]}}]\n", none, "MCP starts sh; this worker was not started with --allow-exec"},
		"an MCP command, wrapped":   {"capabilities: [{PrefixTools: {prefix: x, capability: {MCP: {command: [/bin/sh, -c, id]}}}}]\n", none, "PrefixTools starts sh; this worker was not started with --allow-exec"},
		"an MCP command, allowed":   {"capabilities: [{MCP: {command: [sh, -c, id]}}]\n", Allow{Exec: true}, ""},
		"an MCP cwd outside":        {"capabilities: [{MCP: {command: [sh, -c, id], cwd: /etc}}]\n", Allow{Exec: true}, "MCP reaches /etc, outside the job's workspace"},
		"an MCP cwd through a link": {"capabilities: [{PrefixTools: {prefix: x, capability: {MCP: {command: [sh, -c, id], cwd: out}}}}]\n", all, "PrefixTools reaches " + realOut + ", outside the job's workspace"},
		"an MCP cwd inside":         {"capabilities: [{MCP: {command: [sh, -c, id], cwd: sub}}]\n", Allow{Exec: true}, ""},
		"an MCP url":                {"capabilities: [{MCP: 'http://169.254.169.254/latest?token=SECRET'}]\n", none, "MCP connects to http://169.254.169.254/latest; this worker was not started with --allow-network"},
		"an MCP url, allowed":       {"capabilities: [{MCP: 'http://127.0.0.1:1/mcp'}]\n", Allow{Network: true}, ""},
		"local web fetching":        {"capabilities: [{WebFetch: {local: true}}]\n", none, "WebFetch connects to addresses the model chooses; this worker was not started with --allow-network"},
		"native web search":         {"capabilities: [WebSearch]\n", none, ""},
		"a base_url":                {"model_settings: {base_url: 'http://10.0.0.1/v1'}\n", none, "the spec sends its model requests to a base_url of its own; this worker was not started with --allow-network"},
		"extra headers":             {"model_settings: {extra_headers: {X-A: b}}\n", none, "the spec adds extra_headers to its model requests; this worker was not started with --allow-network"},
		"a base_url, allowed":       {"model_settings: {base_url: 'http://10.0.0.1/v1'}\n", Allow{Network: true, Env: true}, ""},
		"a base_url, network alone": {"model_settings: {base_url: 'http://10.0.0.1/v1'}\n", Allow{Network: true}, "the spec sends its model requests, with this worker's credentials for its provider, to a base_url of its own; this worker was not started with --allow-env"},
		"a local provider":          {"model: ollama:llama3\n", none, "the spec's model ollama:llama3 is served at http://localhost:11434/v1 by default, which this worker's environment does not name (OLLAMA_BASE_URL, OLLAMA_HOST); this worker was not started with --allow-network"},
		"a local provider, allowed": {"model: ollama:llama3\n", Allow{Network: true}, ""},
		"undeclared reach":          {"capabilities: [Opaque]\n", all, "capability Opaque does not say what it reaches (capabilities.Reacher), so a worker does not run it"},
		"an absolute script":        {"model: script:/etc/passwd\n", none, `the spec's script file /etc/passwd: an absolute path; name it relative to the spec`},
		"a script above":            {"model: script:../x.yaml\n", none, `the spec's script file ../x.yaml: it must lie beside the spec or below it`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := "model: script:t.yaml\n" + tc.yaml
			if tc.yaml[:6] == "model:" {
				src = tc.yaml
			}
			s, err := (&spec.Loader{Registry: reg}).Load("agent.yaml", []byte(src))
			require.NoError(t, err)
			w := &Worker{opts: WorkerOptions{Allow: tc.allow, Registry: reg}}
			err = w.confine(context.Background(), s, ws)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				require.EqualError(t, err, tc.err)
				assert.NotContains(t, err.Error(), "SECRET")
			}
		})
	}
}

// A job's reach is asked of capabilities built to be checked: confining an
// MCP command starts nothing, even when the worker would allow it.
func TestConfineStartsNothing(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	marker := filepath.Join(ws, "started")
	s, err := (&spec.Loader{}).Load("agent.yaml", []byte("model: test\ncapabilities: [{MCP: {command: [sh, -c, 'touch "+marker+"']}}]\n"))
	require.NoError(t, err)
	w := &Worker{opts: WorkerOptions{Allow: Allow{Exec: true}}}
	require.NoError(t, w.confine(context.Background(), s, ws))
	_, err = os.Stat(marker)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_ = json.Valid
}

// Only the job's own inline spec may not read the worker's environment: a
// ${VAR} in another step's spec of the same pipeline file is not the job's.
func TestInlineSpecEnvironmentReferences(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "pipeline.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`steps:
  a:
    spec: {model: test, instructions: Say hi.}
  b:
    spec:
      model: test
      instructions: "Say ${HOME} and ${HOMEWARD:-no}."
`), 0o644))
	w := &Worker{}
	s, err := w.parseSpec(file, "/steps/a/spec", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"Say hi."}, s.Instructions)

	_, err = w.parseSpec(file, "/steps/b/spec", "")
	assert.EqualError(t, err, file+":7:26: ${HOME} reads the worker's environment; this worker was not started with --allow-env")

	w.opts.Allow.Env = true
	s, err = w.parseSpec(file, "/steps/b/spec", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"Say " + os.Getenv("HOME") + " and no."}, s.Instructions)
}

// What the run's capabilities reach is judged as the run built them: a
// workspace directory that became a link leading out after the worker
// checked the spec (here the Swap capability, built for the run, stands for
// someone else who can write to the workspace) fails the job before its
// first request, and nothing is written where the link leads.
func TestConfineJudgesTheRunsOwnCapabilities(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	outside := t.TempDir()
	realOutside, err := filepath.EvalSymlinks(outside)
	require.NoError(t, err)

	reg := registryWith(t, capabilities.Type{Name: "Swap",
		New: func(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
			if !args.CheckOnly {
				sub := filepath.Join(args.Dir, "sub")
				if err := os.Rename(sub, sub+".old"); err != nil {
					return nil, err
				}
				if err := os.Symlink(outside, sub); err != nil {
					return nil, err
				}
			}
			return stopper{}, nil // it reaches nothing itself
		}})

	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agent.yaml": "model: script:turns.yaml\ninstructions: Write.\ncapabilities:\n  - Swap\n  - FileSystem: {root_dir: sub}\n",
		"turns.yaml": "turns:\n  - tool_calls: [{name: write_file, arguments: {path: out.txt, content: x}}]\n  - text: done\n",
	})
	specPath := filepath.Join(dir, "agent.yaml")
	s, err := (&spec.Loader{Registry: reg}).LoadFile(specPath)
	require.NoError(t, err)
	ws := filepath.Join(root, "job")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))

	startWorker(t, url, WorkerOptions{WorkspaceRoot: root, Registry: reg, Options: []runtime.Option{runtime.WithRegistry(reg)}})
	got, _ := submit(t, connect(t, url, 0), BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{ws}, WorkspaceRoot: root})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "not retried")
	assert.Contains(t, got[0].Error, "FileSystem reaches "+realOutside+", outside the job's workspace")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written where the link leads")
}

// A spec's own base_url would receive the worker's credentials for its
// provider with every model request: a worker with --allow-network alone
// refuses it, as it refuses ${VAR}, and nothing reaches the endpoint.
func TestBaseURLGetsNoCredentialsWithoutAllowEnv(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, `{"error": {"message": "no"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(endpoint.Close)

	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), "model: openai:gpt-4o\ninstructions: Hi.\nmodel_settings: {base_url: '"+endpoint.URL+"/v1'}\n", "turns: []\n")
	dirs := jobDirs(t, root, 1)
	getenv := func(name string) string {
		if name == "OPENAI_API_KEY" {
			return "sk-worker-secret"
		}
		return ""
	}
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root, Allow: Allow{Network: true},
		Options: []runtime.Option{runtime.WithProviderOptions(providers.Options{Getenv: getenv})}})
	got, _ := submit(t, connect(t, url, 0), BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "not retried")
	assert.Equal(t, "the spec sends its model requests, with this worker's credentials for its provider, to a base_url of its own; this worker was not started with --allow-env", got[0].Error)
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, seen, "no request reached the spec's endpoint")
}

// A problem the worker finds in a spec's capabilities as it builds them,
// to check or to run, is placed in the spec's file as its submitter knows
// it, not in the worker's copy: the error does not show the worker's
// scratch directory. So is a lone one (a LocalWorkspace whose directory is
// missing, which the run reports as one *spec.Error).
func TestCapabilityProblemsNameTheSubmittersFile(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root})
	for name, tt := range map[string]struct {
		old, new string
		check    func(t *testing.T, msg string)
	}{
		"a list": {"{root_dir: .}", "{root_dir: ., cwd: /}", func(t *testing.T, msg string) {
			assert.Equal(t, "agent.yaml:4:36: capabilities[0].FileSystem.cwd: cwd '/' is outside root_dir '.'.", msg)
		}},
		"a lone one": {"  - FileSystem: {root_dir: .}\n", "  - LocalWorkspace: ./missing\n", func(t *testing.T, msg string) {
			assert.True(t, strings.HasPrefix(msg, "agent.yaml:4:"), "%s", msg)
			assert.NotContains(t, msg, scratchPrefix)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := connect(t, url, 0).NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: jobDirs(t, root, 1), WorkspaceRoot: root})
			require.NoError(t, err)
			b.Jobs[0].Spec.Data = []byte(strings.Replace(agentYAML, tt.old, tt.new, 1))
			got, _ := publishAndWait(t, b)
			require.Len(t, got, 1)
			assert.Equal(t, 1, got[0].Attempt, "not retried")
			tt.check(t, got[0].Error)
		})
	}
}

// A job's error names files as its submitter knows them: its workspace as
// the submitter named it, the spec's files beside the spec, and a path the
// spec reaches outside the workspace from there. Neither the worker's
// workspace root (here mounted elsewhere than the submitter's), its copy of
// a shipped workspace, nor its scratch directory shows, in a refusal of the
// spec's reach, a capability's problem or the run's own failure.
func TestErrorsNameTheSubmittersPaths(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	view := filepath.Join(t.TempDir(), "jobs") // the submitter's mount of the workers' root
	require.NoError(t, os.Symlink(root, view))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "other"), 0o755))
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root, Allow: Allow{Exec: true}})
	q := connect(t, url, 0)
	for name, tt := range map[string]struct {
		spec string
		want func(ws string) string // of the job's workspace as the submitter named it
	}{
		"a missing LocalWorkspace": {"model: script:turns.yaml\ncapabilities:\n  - LocalWorkspace: ./missing\n",
			func(ws string) string { return "local workspace directory " + ws + "/missing does not exist" }},
		"a missing MCP cwd": {"model: script:turns.yaml\ncapabilities:\n  - MCP: {command: [srv], cwd: missing}\n",
			func(ws string) string { return "cwd " + ws + "/missing: no such file or directory" }},
		"a missing script": {"model: script:nope.yaml\n",
			func(string) string { return "agent.yaml:1:8: cannot read the script file nope.yaml: no such file" }},
		"a root above the workspace": {"model: script:turns.yaml\ncapabilities:\n  - FileSystem: ../..\n",
			// A path outside the workspace is named from it, as the
			// submitter's own.
			func(ws string) string {
				return "FileSystem reaches " + filepath.Dir(filepath.Dir(ws)) + ", outside the job's workspace"
			}},
		"a sibling root": {"model: script:turns.yaml\ncapabilities:\n  - FileSystem: ../other\n",
			func(ws string) string {
				return "FileSystem reaches " + filepath.Join(ws, "../other") + ", outside the job's workspace"
			}},
	} {
		for _, ship := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, shipped %v", name, ship), func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join(view, "job-000")
				if ship {
					dir = filepath.Join(t.TempDir(), "here")
					require.NoError(t, os.MkdirAll(dir, 0o755))
					if strings.Contains(name, "sibling") {
						t.Skip("a shipped workspace has no sibling on the worker")
					}
				} else {
					require.NoError(t, os.MkdirAll(dir, 0o755))
				}
				b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{dir}, WorkspaceRoot: view, Ship: ship})
				require.NoError(t, err)
				b.Jobs[0].Spec.Data = []byte(tt.spec)
				got, _ := publishAndWait(t, b)
				require.Len(t, got, 1)
				msg := got[0].Error
				assert.Contains(t, msg, tt.want(dir))
				assert.NotContains(t, msg, root)
				assert.NotContains(t, msg, scratchPrefix)
				assert.NotContains(t, msg, shipDir)
			})
		}
	}
}

// How the worker's paths in a message are found and named for the
// submitter: whole names only, a sentence's full stop left out, the
// directories above the root only when named whole.
func TestPathsText(t *testing.T) {
	t.Parallel()
	at := paths{workspace: "/srv/jobs/a/job-0", label: "/mnt/jobs/a/job-0", root: "/srv/jobs", scratch: "/tmp/agentspec-worker-1"}
	for msg, want := range map[string]string{
		"open /srv/jobs/a/job-0/x.txt: no such file":          "open /mnt/jobs/a/job-0/x.txt: no such file",
		"directory /srv/jobs/a/job-0/missing does not exist.": "directory /mnt/jobs/a/job-0/missing does not exist.",
		"'/srv/jobs/a/job-0' is not it":                       "'/mnt/jobs/a/job-0' is not it",
		"/srv/jobs/a/job-00 is another job's":                 "/mnt/jobs/a/job-00 is another job's",
		"/srv/jobs/b and /srv/jobs":                           "/mnt/jobs/b and /mnt/jobs",
		"/srv and /tmp are no job's":                          "/srv and /tmp are no job's",
		"reaches /srv/other, outside":                         "reaches /srv/other, outside",
		"x/srv/jobs/a/job-0 is not a path of ours":            "x/srv/jobs/a/job-0 is not a path of ours",
		"cannot read /tmp/agentspec-worker-1/0f6-2/t.yaml":    "cannot read t.yaml",
		"/etc/passwd and /tmp/x stay":                         "/etc/passwd and /tmp/x stay",
	} {
		assert.Equal(t, want, at.text(msg), msg)
	}
	// A reach refused is named from the workspace, a directory that holds
	// the root too; a path elsewhere as it is.
	for path, want := range map[string]string{"/srv": "/mnt", "/srv/jobs/b": "/mnt/jobs/b", "/etc": "/etc"} {
		err := errPermanent{&outsideError{capability: "FileSystem", path: path}}
		assert.Equal(t, "FileSystem reaches "+want+", outside the job's workspace", at.refusal(err), path)
	}
	// Without a workspace (the job failed before it had one), the root is
	// no directory of the submitter's: it is not shown.
	assert.Equal(t, "t.yaml and …/x, … and /srv/other", paths{root: "/srv/jobs", scratch: "/tmp/agentspec-worker-1"}.text("/tmp/agentspec-worker-1/0f6-2/t.yaml and /srv/jobs/x, /srv/jobs and /srv/other"))
}

// A job's events name files as the submitter knows them, as its errors do:
// a FileSystem's root_dir is the workspace as the submitter named it, not
// the worker's copy of it, and every line stays JSON whatever the name.
func TestEventsNameTheSubmittersPaths(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root})
	dir := filepath.Join(t.TempDir(), `a "quoted" \ workspace`)
	writeFiles(t, dir, map[string]string{"input.txt": "input of job 0\n"})
	b, err := connect(t, url, 0).NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{dir}, Ship: true})
	require.NoError(t, err)
	var mu sync.Mutex
	var roots []string
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		assert.NotContains(t, string(ev), root)
		assert.NotContains(t, string(ev), scratchPrefix)
		var e struct {
			RootDir string `json:"root_dir"`
		}
		require.NoError(t, json.Unmarshal(ev, &e), "%s", ev)
		if e.RootDir != "" {
			mu.Lock()
			roots = append(roots, e.RootDir)
			mu.Unlock()
		}
	}))
	got, _ := publishAndWait(t, b)
	b.Close()
	require.Len(t, got, 1)
	require.True(t, got[0].OK, got[0].Error)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, roots)
	for _, r := range roots {
		assert.Equal(t, dir, r)
	}
}

// In an event's line a path may follow one of JSON's escapes, as one on a
// line of its own in a tool's output or the model's text follows "\n", and
// a sentence may end at the string's end: each is read as the character
// it stands for, as in a text, a backslash that is itself escaped being
// text, as a letter after it is.
func TestPathsJSONAfterAnEscape(t *testing.T) {
	t.Parallel()
	at := paths{workspace: "/srv/jobs/a/job-0", label: "/mnt/jobs/a/job-0", root: "/srv/jobs", scratch: "/tmp/agentspec-worker-1"}
	for line, want := range map[string]string{
		`{"output":"x.c: In function f\n/srv/jobs/a/job-0/x.c:3: error"}`: `{"output":"x.c: In function f\n/mnt/jobs/a/job-0/x.c:3: error"}`,
		`{"output":"cwd:\t/srv/jobs/a/job-0\r\n"}`:                        `{"output":"cwd:\t/mnt/jobs/a/job-0\r\n"}`,
		`{"output":"\u003c/srv/jobs/a/job-0/x\u003e"}`:                    `{"output":"\u003c/mnt/jobs/a/job-0/x\u003e"}`,
		`{"output":"\u00e9/srv/jobs/a/job-0 is text after a letter"}`:     `{"output":"\u00e9/srv/jobs/a/job-0 is text after a letter"}`,
		`{"output":"\"/srv/jobs/b\""}`:                                    `{"output":"\"/mnt/jobs/b\""}`,
		`{"output":"a\\n/srv/jobs/a/job-0 is text after n"}`:              `{"output":"a\\n/srv/jobs/a/job-0 is text after n"}`,
		`{"output":"x/srv/jobs/a/job-0"}`:                                 `{"output":"x/srv/jobs/a/job-0"}`,
	} {
		got := at.json([]byte(line))
		assert.Equal(t, want, string(got), line)
		assert.True(t, json.Valid(got), "%s", got)
	}
	// A shipped workspace's copy at the end of a sentence is the
	// submitter's workspace, not a directory beside it.
	shipped := paths{workspace: "/srv/jobs/" + shipDir + "/j-1", label: "/home/me/proj", root: "/srv/jobs"}
	for line, want := range map[string]string{
		`{"text":"I worked in /srv/jobs/` + shipDir + `/j-1."}`:        `{"text":"I worked in /home/me/proj."}`,
		`{"text":"I worked in /srv/jobs/` + shipDir + `/j-1.\nThen"}`:  `{"text":"I worked in /home/me/proj.\nThen"}`,
		`{"text":"I worked in /srv/jobs/` + shipDir + `/j-1. Then"}`:   `{"text":"I worked in /home/me/proj. Then"}`,
		`{"text":"I worked in /srv/jobs/` + shipDir + `/j-1.\\nThen"}`: `{"text":"I worked in /home/me/j-1.\\nThen"}`,
	} {
		got := shipped.json([]byte(line))
		assert.Equal(t, want, string(got), line)
		assert.True(t, json.Valid(got), "%s", got)
	}
	// A long run of backslashes (a tool's output) is read once, not again
	// at each of its characters.
	long := `{"output":"` + strings.Repeat(`\\`, 1<<20) + `/srv/jobs/a/job-0"}`
	start := time.Now()
	got := at.json([]byte(long))
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.True(t, strings.HasSuffix(string(got), `\\/mnt/jobs/a/job-0"}`))
}

// A file of the worker's own in its scratch directory, beside the specs'
// directories (the archive of a run's changes is made there), is no
// spec's: a message does not name it "." as it names a spec's directory,
// the place of the spec's files, but shows it as one of a directory not
// shown.
func TestPathsWorkersOwnScratchFile(t *testing.T) {
	t.Parallel()
	at := paths{workspace: "/srv/jobs/a/job-0", label: "/mnt/jobs/a/job-0", root: "/srv/jobs", scratch: "/tmp/agentspec-worker-1"}
	for msg, want := range map[string]string{
		"write /tmp/agentspec-worker-1/agentspec-ship-12.tar.gz: no space left on device": "write …/agentspec-ship-12.tar.gz: no space left on device",
		"cannot read /tmp/agentspec-worker-1/0f6-2/t.yaml":                                "cannot read t.yaml",
		"mkdir /tmp/agentspec-worker-1/0f6-2: no space left on device":                    "mkdir .: no space left on device",
	} {
		assert.Equal(t, want, at.text(msg), msg)
	}
}

// A shipped job that fails before the worker has its copy (the directory
// of copies cannot be made) names no path of the worker's root, in its
// result or in the job.retry events of its attempts: the submitter, who
// knows nothing of that root, is shown the worker's directory as one not
// shown.
func TestPathsBeforeTheCopyIsMade(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	// A file where the directory of copies goes: no copy can be made.
	require.NoError(t, os.WriteFile(filepath.Join(root, shipDir), nil, 0o600))
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root, MaxAttempts: 2})
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"input.txt": "input of job 0\n"})
	b, err := connect(t, url, 0).NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{dir}, Ship: true})
	require.NoError(t, err)
	var mu sync.Mutex
	var retries []string
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		if strings.Contains(string(ev), `"kind":"job.retry"`) {
			mu.Lock()
			retries = append(retries, string(ev))
			mu.Unlock()
		}
	}))
	got, _ := publishAndWait(t, b)
	b.Close()
	require.Len(t, got, 1)
	require.False(t, got[0].OK)
	t.Log(got[0].Error)
	assert.NotContains(t, got[0].Error, root)
	assert.Contains(t, got[0].Error, "…"+string(filepath.Separator)+shipDir)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, retries)
	for _, ev := range retries {
		assert.NotContains(t, ev, root)
	}
}

package filesystem

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func toolNames(t *testing.T, c *Capability) []string {
	t.Helper()
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	return names
}

func TestToolSelection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tools    []string
		readOnly bool
		want     []string
	}{
		{"registration order wins", []string{ToolFileInfo, ToolReadFile}, false, []string{ToolReadFile, ToolFileInfo}},
		{"read only filters", []string{ToolWriteFile, ToolReadFile, ToolEditFile, ToolCreateDirectory, ToolFileInfo}, true,
			[]string{ToolReadFile, ToolFileInfo}},
		{"duplicates collapse", []string{ToolReadFile, ToolReadFile}, false, []string{ToolReadFile}},
		{"empty list registers nothing", []string{}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Options{Tools: tt.tools, ReadOnly: tt.readOnly}, t.TempDir())
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, tt.want, toolNames(t, c))
		})
	}
}

func TestToolNameLists(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"read_file", "write_file", "edit_file", "list_directory", "search_files", "find_files",
		"create_directory", "file_info", "list_files", "grep"}, AllToolNames)
	for _, n := range ReadOnlyToolNames {
		assert.Contains(t, AllToolNames, n)
	}
	assert.NotContains(t, ReadOnlyToolNames, ToolWriteFile)
}

func TestUnknownTools(t *testing.T) {
	t.Parallel()
	_, err := New(Options{Tools: []string{"zap", ToolReadFile, "bogus"}}, t.TempDir())
	var ae *capabilities.ArgError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "tools", ae.Option)
	assert.Equal(t, "Unknown filesystem tools: bogus, zap. Available: read_file, write_file, edit_file, list_directory, "+
		"search_files, find_files, create_directory, file_info, list_files, grep.", ae.Msg)
}

// Every tool a spec may select is built: the table of constructors names
// each tool once, so New never meets a selected tool it cannot build.
func TestEveryToolHasAFactory(t *testing.T) {
	t.Parallel()
	assert.Len(t, toolFactories, len(AllToolNames))
	for _, n := range AllToolNames {
		assert.NotNil(t, toolFactories[n], n)
	}
	c, err := New(Options{Tools: AllToolNames}, t.TempDir())
	require.NoError(t, err)
	defer c.Close()
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	assert.Equal(t, AllToolNames, names)
}

func TestRootAndCwd(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	mustWrite(t, ws, "proj/src/a.txt", "a\n")
	mustWrite(t, ws, "file.txt", "x")
	mustSymlink(t, "proj", filepath.Join(ws, "projlink"))
	other := t.TempDir()
	realWS, err := filepath.EvalSymlinks(ws)
	require.NoError(t, err)

	tests := []struct {
		name     string
		opts     Options
		wantRoot string // relative to ws
		wantCwd  string
		option   string // ArgError option, when an error is expected
		msg      string
	}{
		{name: "default root is the workspace", wantRoot: ".", wantCwd: "."},
		{name: "relative root", opts: Options{RootDir: "proj"}, wantRoot: "proj", wantCwd: "."},
		{name: "symlinked root is resolved", opts: Options{RootDir: "projlink"}, wantRoot: "proj", wantCwd: "."},
		{name: "cwd below root", opts: Options{Cwd: "proj/src"}, wantRoot: ".", wantCwd: "proj/src"},
		{name: "cwd through a symlink", opts: Options{Cwd: "projlink/src"}, wantRoot: ".", wantCwd: "proj/src"},
		{name: "root above cwd", opts: Options{RootDir: "..", Cwd: "."}, wantRoot: "..", wantCwd: filepath.Base(ws)},
		{name: "missing root", opts: Options{RootDir: "nope"}, option: "root_dir", msg: "root_dir 'nope' does not exist."},
		{name: "root is a file", opts: Options{RootDir: "file.txt"}, option: "root_dir", msg: "root_dir 'file.txt' is not a directory."},
		{name: "cwd outside", opts: Options{RootDir: "proj", Cwd: other}, option: "cwd",
			msg: "cwd '" + other + "' is outside root_dir 'proj'."},
		// As the reference words it: the cwd resolved (absolute, symlinks
		// followed), the root as given.
		{name: "cwd sibling", opts: Options{RootDir: "proj/src", Cwd: "proj"}, option: "cwd",
			msg: "cwd '" + filepath.Join(realWS, "proj") + "' is outside root_dir 'proj/src'."},
		{name: "cwd outside through a symlink", opts: Options{RootDir: "proj/src", Cwd: "projlink"}, option: "cwd",
			msg: "cwd '" + filepath.Join(realWS, "proj") + "' is outside root_dir 'proj/src'."},
		{name: "negative limit", opts: Options{MaxReadLines: -1}, option: "max_read_lines",
			msg: "max_read_lines must be a positive integer, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.opts.Tools = []string{}
			c, err := New(tt.opts, ws)
			if tt.option != "" {
				var ae *capabilities.ArgError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.option, ae.Option)
				assert.Equal(t, tt.msg, ae.Msg)
				return
			}
			require.NoError(t, err)
			defer c.Close()
			realWS, _ := filepath.EvalSymlinks(ws)
			assert.Equal(t, filepath.Clean(filepath.Join(realWS, tt.wantRoot)), c.RootDir())
			assert.Equal(t, tt.wantCwd, c.fs.cwd)
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{}, nil)
	o := c.fs.opts
	assert.Equal(t, 2000, o.MaxReadLines)
	assert.Equal(t, 0, o.MaxReadChars)
	assert.Equal(t, 1000, o.MaxListResults)
	assert.Equal(t, 1000, o.MaxSearchResults)
	assert.Equal(t, 1000, o.MaxFindResults)
	assert.True(t, c.fs.hashes())
	assert.True(t, *o.WatchChanges)
	assert.False(t, o.RequireReadBeforeWrite)
	assert.Equal(t, DefaultProtectedPatterns, o.ProtectedPatterns)

	empty, _ := newTestFS(t, Options{ProtectedPatterns: []string{}}, nil)
	assert.Empty(t, empty.fs.protected, "an empty list disables protection")
}

func TestContentHashesOffRemovesExpectedHash(t *testing.T) {
	t.Parallel()
	no := false
	for _, hashes := range []*bool{nil, &no} {
		c, _ := newTestFS(t, Options{ContentHashes: hashes}, nil)
		for _, tl := range c.tools {
			if tl.Name() != ToolWriteFile && tl.Name() != ToolEditFile {
				continue
			}
			_, has := tl.Parameters()["properties"].(map[string]any)["expected_hash"]
			assert.Equal(t, hashes == nil, has, "%s expected_hash with content_hashes=%v", tl.Name(), hashes)
		}
	}
}

// Every tool's parameters are a JSON Schema that accepts what the tool
// accepts.
func TestToolParametersAreSchemas(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{}, nil)
	for _, tl := range c.tools {
		raw, err := json.Marshal(tl.Parameters())
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
		require.NoError(t, err)
		comp := jsonschema.NewCompiler()
		require.NoError(t, comp.AddResource("tool.json", doc))
		_, err = comp.Compile("tool.json")
		require.NoError(t, err, tl.Name())
		assert.NotEmpty(t, tl.Description())
	}
}

func TestRegisteredType(t *testing.T) {
	t.Parallel()
	reg := capabilities.Default()
	typ, ok := reg.Lookup(TypeName)
	require.True(t, ok)
	assert.Equal(t, "root_dir", typ.Positional)

	valid := []string{
		`{}`,
		`{"root_dir": "."}`,
		`{"cwd": null, "max_read_chars": null}`,
		`{"max_read_chars": 100, "tools": ["read_file", "grep"], "read_only": true, "content_hashes": false}`,
		`{"protected_patterns": [], "allowed_patterns": ["*.py"], "denied_patterns": ["private"]}`,
		`{"watch_changes": false, "require_read_before_write": true}`,
	}
	invalid := []string{
		`{"watch_changes": "no"}`,
		`{"require_read_before_write": 1}`,
		`{"max_read_lines": true}`,
		`{"max_read_lines": 0}`,
		`{"max_list_results": "10"}`,
		`{"max_read_chars": 0}`,
		`{"tools": ["bogus"]}`,
		`{"tools": "read_file"}`,
		`{"read_only": "yes"}`,
		`{"root": "."}`,
	}
	for _, doc := range valid {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		require.NoError(t, err)
		assert.NoError(t, reg.ValidateOptions(TypeName, v), doc)
	}
	for _, doc := range invalid {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		require.NoError(t, err)
		assert.Error(t, reg.ValidateOptions(TypeName, v), doc)
	}

	ws := t.TempDir()
	capab, err := reg.New(context.Background(), TypeName, capabilities.Args{
		Options: json.RawMessage(`{"tools": ["read_file"], "max_read_chars": null}`), Setup: capabilities.Setup{Dir: ws}})
	require.NoError(t, err)
	c := capab.(*Capability)
	defer c.Close()
	assert.Equal(t, []string{ToolReadFile}, toolNames(t, c))

	_, err = reg.New(context.Background(), TypeName, capabilities.Args{Options: json.RawMessage(`{"max_read_lines": "x"}`), Setup: capabilities.Setup{Dir: ws}})
	var ae *capabilities.ArgError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "max_read_lines", ae.Option)
}

// The schema and Options cannot drift apart: same keys, and every property
// has a description.
func TestSchemaMatchesOptions(t *testing.T) {
	t.Parallel()
	var schema struct {
		AdditionalProperties bool                      `json:"additionalProperties"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal([]byte(optionsSchema), &schema))
	assert.False(t, schema.AdditionalProperties)
	var keys []string
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "-" { // set by programs, never by a spec
			keys = append(keys, name)
		}
	}
	var props []string
	for k, p := range schema.Properties {
		props = append(props, k)
		assert.NotEmpty(t, p["description"], k)
	}
	sort.Strings(keys)
	sort.Strings(props)
	assert.Equal(t, keys, props)
	enum := schema.Properties["tools"]["items"].(map[string]any)["enum"].([]any)
	var names []string
	for _, e := range enum {
		names = append(names, e.(string))
	}
	assert.Equal(t, AllToolNames, names)
	var protected []string
	for _, p := range schema.Properties["read_only_patterns"]["default"].([]any) {
		protected = append(protected, p.(string))
	}
	assert.Equal(t, DefaultProtectedPatterns, protected)
	var secret []string
	for _, p := range schema.Properties["secret_patterns"]["default"].([]any) {
		secret = append(secret, p.(string))
	}
	assert.Equal(t, DefaultSecretPatterns, secret)
}

func TestDecodeArgs(t *testing.T) {
	t.Parallel()
	type args struct {
		Path   string `json:"path"`
		Offset int    `json:"offset,omitempty"`
		Limit  *int   `json:"limit,omitempty"`
	}
	tests := []struct{ raw, want string }{
		{`{"path": "a"}`, ""},
		{``, "Missing required argument 'path'."},
		{`{"path": null}`, "Missing required argument 'path'."},
		{`{"path": "a", "bogus": 1}`, "Unknown argument 'bogus'. Expected: path, offset, limit."},
		{`{"path": "a", "offset": "3"}`, "Argument 'offset' must be an integer, got string."},
		{`{"path": "a", "offset": 1.5}`, "Argument 'offset' must be an integer, got number 1.5."},
		{`{"path": 7}`, "Argument 'path' must be a string, got number."},
		{`[1]`, "Invalid arguments: expected a JSON object of named arguments."},
	}
	for _, tt := range tests {
		var a args
		err := decodeArgs(json.RawMessage(tt.raw), &a)
		if tt.want == "" {
			assert.NoError(t, err, tt.raw)
			continue
		}
		msg, ok := capabilities.AsRetry(err)
		assert.True(t, ok, tt.raw)
		assert.Equal(t, tt.want, msg, tt.raw)
	}
}

func TestCloseReleasesRoot(t *testing.T) {
	t.Parallel()
	c, err := New(Options{Tools: []string{ToolReadFile}}, t.TempDir())
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = c.fs.root.Lstat(".")
	assert.True(t, errors.Is(err, os.ErrClosed), "%v", err)
	assert.False(t, slices.Contains(toolNames(t, c), ToolWriteFile))
}

// A root that puts far more than a project in the model's reach warns: the
// root of the file system, the user's home directory (resolved) and a
// directory holding it.
func TestRootWarnings(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "users", "me")
	require.NoError(t, os.MkdirAll(filepath.Join(home, "proj"), 0o755))
	mustSymlink(t, home, filepath.Join(base, "homelink"))
	t.Setenv("HOME", filepath.Join(base, "homelink")) // resolved before it is compared
	t.Setenv("USERPROFILE", filepath.Join(base, "homelink"))
	fsRoot := filepath.VolumeName(base) + string(filepath.Separator)

	const reach = ": the model can reach every file below it that this process may; give the project's directory instead."
	for _, tc := range []struct {
		root, dir string
		want      []string
	}{
		{fsRoot, "", []string{"root_dir " + pyRepr(fsRoot) + " is the root of the file system" + reach}},
		{home, "", []string{"root_dir " + pyRepr(home) + " is your home directory" + reach}},
		{".", filepath.Join(base, "homelink"), []string{"root_dir '.' is your home directory" + reach}},
		{"me/..", filepath.Join(base, "users"), []string{"root_dir 'me/..' holds your home directory" + reach}},
		{base, "", []string{"root_dir " + pyRepr(base) + " holds your home directory" + reach}},
		{"proj", home, nil},
		{filepath.Join(base, "homelink", "proj"), "", nil},
	} {
		c, err := New(Options{RootDir: tc.root, Tools: []string{ToolReadFile}}, tc.dir)
		require.NoError(t, err, tc.root)
		assert.Equal(t, tc.want, c.Warnings(), "root_dir %s in %s", tc.root, tc.dir)
		require.NoError(t, c.Close())
	}

	// What the factory registered for specs builds says it too.
	c, err := capabilities.Default().New(context.Background(), TypeName, capabilities.Args{
		Options: json.RawMessage(`{"root_dir": ".", "tools": ["read_file"]}`), Setup: capabilities.Setup{Dir: home}})
	require.NoError(t, err)
	defer c.(*Capability).Close()
	w, ok := c.(interface{ Warnings() []string })
	require.True(t, ok, "the capability offers its warnings")
	assert.Equal(t, []string{"root_dir '.' is your home directory" + reach}, w.Warnings())
}

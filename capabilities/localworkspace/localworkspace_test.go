package localworkspace

import (
	"context"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

func build(t *testing.T, options string, setup capabilities.Setup) (capabilities.Workspace, error) {
	t.Helper()
	c, err := capabilities.Default().New(context.Background(), TypeName, capabilities.Args{Options: json.RawMessage(options), Setup: setup})
	if err != nil {
		return capabilities.Workspace{}, err
	}
	setter, ok := capabilities.As[capabilities.WorkspaceSetter](c)
	require.True(t, ok, "a LocalWorkspace says which workspace it sets")
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	assert.Empty(t, tools, "it offers no tools of its own")
	return setter.Workspace(), nil
}

func TestWorkspace(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(base, "repo"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o644))
	home, err := os.UserHomeDir()
	require.NoError(t, err)

	ws, err := build(t, `{"working_dir": "repo", "read_only": true, "env": {"CI": "1"}}`, capabilities.Setup{Dir: base})
	require.NoError(t, err)
	assert.Equal(t, capabilities.Workspace{Dir: filepath.Join(base, "repo"), ReadOnly: true, Env: map[string]string{"CI": "1"}}, ws,
		"a relative working_dir resolves against the run's workspace")

	ws, err = build(t, `{"working_dir": "."}`, capabilities.Setup{Dir: base})
	require.NoError(t, err)
	assert.Equal(t, base, ws.Dir, "LocalWorkspace: . is the workspace the run was given")

	ws, err = build(t, `{"working_dir": "~"}`, capabilities.Setup{Dir: base, CheckOnly: true})
	require.NoError(t, err)
	assert.Equal(t, home, ws.Dir, "~ is the home directory")

	// ~NAME is NAME's home, as Python's expanduser reads it.
	me, err := user.Current()
	require.NoError(t, err)
	ws, err = build(t, `{"working_dir": "~`+me.Username+`/project"}`, capabilities.Setup{Dir: base, CheckOnly: true})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(me.HomeDir, "project"), ws.Dir, "~NAME/project is below NAME's home")
	_, err = build(t, `{"working_dir": "~no-such-user-here/project"}`, capabilities.Setup{Dir: base, CheckOnly: true})
	require.Error(t, err)
	assert.Equal(t, "working_dir ~no-such-user-here/project: no home directory for the user no-such-user-here", err.Error())

	for options, want := range map[string]string{
		`{"working_dir": "missing"}`:                  "local workspace directory " + filepath.Join(base, "missing") + " does not exist",
		`{"working_dir": "file"}`:                     "local workspace directory " + filepath.Join(base, "file") + " is not a directory",
		`{"working_dir": ".", "defer_loading": true}`: "LocalWorkspace cannot be loaded later: the workspace is the run's from its start",
		`{"working_dir": ".", "env": {"A=B": "x"}}`:   `"A=B" is not a variable a command can be given`,
		// The name is fine, its value is what exec cannot pass; and of
		// several wrong, the first by name, whatever the map's order.
		`{"working_dir": ".", "env": {"A": "x\u0000y"}}`:                     `the value of env "A" contains a NUL byte, which cannot be passed to a process`,
		`{"working_dir": ".", "env": {"B=": "x", "A=": "x", "C": "\u0000"}}`: `"A=" is not a variable a command can be given`,
	} {
		_, err := build(t, options, capabilities.Setup{Dir: base})
		require.Error(t, err, options)
		assert.Equal(t, want, err.Error(), options)
	}

	ws, err = build(t, `{"working_dir": "later"}`, capabilities.Setup{Dir: base, CheckOnly: true})
	require.NoError(t, err, "a spec checked before its run may name a directory that comes later")
	assert.Equal(t, filepath.Join(base, "later"), ws.Dir)
}

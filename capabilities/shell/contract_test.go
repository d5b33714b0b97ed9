package shell

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/confine"
	"github.com/agentspec/agentspec/spec"
)

func TestReachAndHints(t *testing.T) {
	t.Parallel()
	w := realTemp(t)
	for _, tc := range []struct {
		opts    Options
		paths   []capabilities.PathReach
		network []string
	}{
		{Options{Sandbox: "off"}, []capabilities.PathReach{{Path: "/", Write: true}}, []string{"*"}},
		{Options{Sandbox: "off", Network: true}, []capabilities.PathReach{{Path: "/", Write: true}}, []string{"*"}},
	} {
		s, err := New(tc.opts, w)
		require.NoError(t, err)
		r, ok := capabilities.ReachOf(s)
		require.True(t, ok)
		assert.Equal(t, []string{capabilities.Anywhere}, r.Processes)
		assert.Equal(t, tc.paths, r.Paths)
		assert.Equal(t, tc.network, r.Network)
		assert.Empty(t, r.Env)
		tools, _ := s.Tools(context.Background())
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name())
			h := capabilities.HintsOf(tl)
			assert.False(t, h.ReadOnly, tl.Name())
		}
		assert.Equal(t, DefaultToolNames, names)
		run := capabilities.HintsOf(tools[0])
		assert.True(t, run.Destructive)
		assert.True(t, run.OpenWorld)
		s.Close()
	}
	// Confined, the reach is the workspace, and the network only when allowed.
	c := &Capability{cfg: &config{sandbox: true}, root: w}
	assert.Equal(t, capabilities.Reach{Processes: []string{"*"}, Paths: []capabilities.PathReach{{Path: w, Write: true}}}, c.Reach())
	c.cfg.network = true
	assert.Equal(t, []string{"*"}, c.Reach().Network)
	assert.True(t, c.newTool(ToolRunCommand).Hints().OpenWorld)
	c.cfg.network = false
	assert.False(t, c.newTool(ToolRunCommand).Hints().OpenWorld)
}

// A spec's Shell is registered with the built-in types, and sees the
// spec's FileSystem once the capabilities are built.
func TestInstantiateShowsPeers(t *testing.T) {
	t.Parallel()
	w := realTemp(t)
	src := "model: test\ncapabilities:\n  - Shell: {sandbox: off}\n  - FileSystem: {root_dir: ., denied_patterns: [private]}\n"
	s, err := (&spec.Loader{}).Load(filepath.Join(w, "agent.yaml"), []byte(src))
	require.NoError(t, err)
	caps, err := spec.Instantiate(context.Background(), s, nil, capabilities.Setup{Dir: w})
	require.NoError(t, err)
	defer func() {
		for _, c := range caps {
			c.(interface{ Close() error }).Close()
		}
	}()
	sh := caps[0].(*Capability)
	assert.Same(t, caps[1].(*filesystem.Capability), sh.guard)
	assert.True(t, sh.guard.GuardPath(filepath.Join(w, "private")).Denied)
	warnings := spec.CapabilityWarnings(s, caps)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0].Error(), SandboxOffWarning)
}

// With the sandbox on, a Shell is built only where commands can be
// confined; elsewhere its factory fails with confine's refusal, which
// validate shows at the entry.
func TestSandboxOnNeedsConfinement(t *testing.T) {
	t.Parallel()
	_, err := New(Options{}, t.TempDir())
	if want := confine.Available(); want != nil {
		assert.Equal(t, want, err)
		assert.Contains(t, err.Error(), "Set `sandbox: off` on the Shell entry to run them unconfined.")
		return
	}
	assert.NoError(t, err)
}

package shell

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// options decodes a spec's options as the registry hands them over.
func options(t *testing.T, js string) Options {
	t.Helper()
	var o Options
	require.NoError(t, capabilities.Args{Options: json.RawMessage(js)}.Decode(&o))
	return o
}

func TestConstructionErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts, option, want string
	}{
		{`{"allowed_commands": ["ls"], "denied_commands": ["rm"]}`, "denied_commands", "Specify allowed_commands or denied_commands, not both."},
		{`{"allowed_commands": ["ls"], "denied_commands": ["rm", "rmdir", "mkfs", "dd", "format", "shutdown", "reboot", "halt", "poweroff", "init"]}`,
			"denied_commands", "Specify allowed_commands or denied_commands, not both."},
		{`{"max_output_chars": 0}`, "max_output_chars", "max_output_chars must be a positive integer."},
		{`{"max_output_chars": -5}`, "max_output_chars", "max_output_chars must be a positive integer."},
		{`{"tools": ["run_command", "zap", "bash", "zap"]}`, "tools", "Unknown shell tools: bash, zap. Available: run_command, start_command, check_command, stop_command, shell."},
		{`{"tools": ["shell"]}`, "tools", "`shell` (the persistent tool) is not offered by agentspec: its commands outlive the run"},
		{`{"max_file_bytes": 0}`, "max_file_bytes", "max_file_bytes must be a positive integer."},
		{`{"max_file_bytes": -1}`, "max_file_bytes", "max_file_bytes must be a positive integer."},
		{`{"max_file_bytes": 9223372036854775808}`, "max_file_bytes", "max_file_bytes must not exceed sys.maxsize."},
		{`{"max_file_bytes": 1e30}`, "max_file_bytes", "max_file_bytes must not exceed sys.maxsize."},
		{`{"max_file_bytes": 1024, "persist_cwd": true}`, "max_file_bytes", "max_file_bytes is not supported with persist_cwd; cwd capture writes a file in the child."},
		{`{"default_timeout": 700}`, "default_timeout", "default_timeout (700.0 seconds) must be at most max_timeout (600.0 seconds)."},
		{`{"sandbox": "maybe"}`, "sandbox", "sandbox must be on or off, got maybe"},
		// A name exec cannot pass: "A=B" would reach the command as A with
		// the value "B=x", "" as a nameless entry, a NUL not at all.
		{`{"env": {"A=B": "x"}}`, "env", `"A=B" is not a variable a command can be given`},
		{`{"env": {"": "x"}}`, "env", `"" is not a variable a command can be given`},
		{`{"env": {"A\u0000B": "x"}}`, "env", `"A\x00B" is not a variable a command can be given`},
		{`{"env": {"OK": "1", "A=B": "x"}, "denied_env_patterns": ["A*"]}`, "env", `"A=B" is not a variable a command can be given`},
		{`{"env": {"A": "x\u0000y"}}`, "env", `the value of env "A" contains a NUL byte, which cannot be passed to a process`},
		// Several wrong at once: the reference's order, max_file_bytes
		// and its conflict with persist_cwd before the lists, the output
		// cap and the tools.
		{`{"max_file_bytes": 0, "allowed_commands": ["ls"], "denied_commands": ["rm"]}`, "max_file_bytes", "max_file_bytes must be a positive integer."},
		{`{"max_file_bytes": 1024, "persist_cwd": true, "max_output_chars": 0}`, "max_file_bytes", "max_file_bytes is not supported with persist_cwd; cwd capture writes a file in the child."},
		{`{"max_file_bytes": 1e30, "tools": ["zap"]}`, "max_file_bytes", "max_file_bytes must not exceed sys.maxsize."},
		{`{"allowed_commands": ["ls"], "denied_commands": ["rm"], "max_output_chars": 0, "tools": ["zap"]}`, "denied_commands", "Specify allowed_commands or denied_commands, not both."},
		{`{"max_output_chars": 0, "tools": ["zap"]}`, "max_output_chars", "max_output_chars must be a positive integer."},
	} {
		_, err := configure(options(t, tc.opts))
		var argErr *capabilities.ArgError
		require.ErrorAs(t, err, &argErr, tc.opts)
		assert.Equal(t, tc.option, argErr.Option, tc.opts)
		assert.Equal(t, tc.want, argErr.Msg, tc.opts)
	}
}

// A variable longer than exec passes (MAX_ARG_STRLEN, 128 KiB for
// NAME=value and its NUL) is refused with the spec, since every command
// would fail to start with E2BIG, ending the run.
func TestEnvTooLongForAProcess(t *testing.T) {
	t.Parallel()
	const most = 128<<10 - 1 // NAME=value, without its NUL
	_, err := configure(Options{Env: map[string]string{"BIG": strings.Repeat("x", most-len("BIG="))}})
	require.NoError(t, err)
	_, err = configure(Options{Env: map[string]string{"BIG": strings.Repeat("x", most-len("BIG=")+1)}})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr)
	assert.Equal(t, "env", argErr.Option)
	assert.Equal(t, `env "BIG" is too long to be passed to a process: 131072 bytes as BIG=value, at most 131071`, argErr.Msg)
}

func TestDeniedCommandsDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts   string
		denied []string
	}{
		{`{}`, DefaultDeniedCommands},
		{`{"allowed_commands": ["ls"]}`, nil},
		{`{"allowed_commands": []}`, DefaultDeniedCommands},
		{`{"denied_commands": []}`, []string{}},
		{`{"denied_commands": ["git"]}`, []string{"git"}},
		{`{"allowed_commands": ["ls"], "denied_commands": []}`, []string{}},
	} {
		c, err := configure(options(t, tc.opts))
		require.NoError(t, err, tc.opts)
		assert.Equal(t, tc.denied, c.denied, tc.opts)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := configure(Options{})
	require.NoError(t, err)
	assert.Equal(t, 30.0, c.defaultTimeout)
	assert.Equal(t, 600.0, c.maxTimeout)
	assert.Equal(t, 50_000, c.maxOutputChars)
	assert.Equal(t, 4, c.maxBackground)
	assert.Equal(t, DefaultToolNames, c.tools)
	assert.True(t, c.sandbox)
	assert.False(t, c.network)
	assert.Empty(t, c.warnings)

	c, err = configure(options(t, `{"tools": ["stop_command", "run_command"]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"run_command", "stop_command"}, c.tools, "registration order")
}

func TestSandboxValues(t *testing.T) {
	t.Parallel()
	for js, on := range map[string]bool{`{}`: true, `{"sandbox": "on"}`: true, `{"sandbox": true}`: true,
		`{"sandbox": "off"}`: false, `{"sandbox": false}`: false} {
		c, err := configure(options(t, js))
		require.NoError(t, err, js)
		assert.Equal(t, on, c.sandbox, js)
		if !on {
			assert.Contains(t, c.warnings, "Shell sandbox is off: commands can change files outside the workspace, read secrets and reach the network")
		}
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	c, err := configure(options(t, `{"sandbox": "off", "cwd": "./repo", "env": {"OPENAI_API_KEY": "x", "GOOGLE_CLOUD_PROJECT": "p", "HF_TOKEN": "t", "FOO": "bar"}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"`Shell(cwd=...)` is deprecated and ignored: commands/paths start in the workspace's working directory; set it on the workspace, e.g. `LocalWorkspace('./repo')`.",
		"env names GOOGLE_CLOUD_PROJECT, a model provider's credential: every command, and whatever it runs, can read it; add it to denied_env_patterns or leave it out.",
		"env names HF_TOKEN, a model provider's credential: every command, and whatever it runs, can read it; add it to denied_env_patterns or leave it out.",
		"env names OPENAI_API_KEY, a model provider's credential: every command, and whatever it runs, can read it; add it to denied_env_patterns or leave it out.",
		SandboxOffWarning,
	}, c.warnings)
}

// The schema is what a spec is validated against: YAML's booleans for
// sandbox pass, a misspelt option does not.
func TestSchema(t *testing.T) {
	t.Parallel()
	reg := capabilities.NewRegistry()
	require.NoError(t, reg.Register(capabilities.Type{Name: TypeName, Schema: []byte(optionsSchema), New: newFromArgs}))
	for _, ok := range []string{`{}`, `{"sandbox": false}`, `{"sandbox": "off"}`, `{"network": true, "max_background": 2}`,
		`{"cwd": null, "env": null, "max_file_bytes": null}`, `{"id": "sh", "allow_git_writes": true}`} {
		v, err := jsonschema.UnmarshalJSON(stringsReader(ok))
		require.NoError(t, err)
		assert.NoError(t, reg.ValidateOptions(TypeName, v), ok)
	}
	for _, bad := range []string{`{"sandbox": "yes"}`, `{"denied_command": []}`, `{"max_background": 0}`, `{"default_timeout": 0}`, `{"env": {"A": 1}}`} {
		v, err := jsonschema.UnmarshalJSON(stringsReader(bad))
		require.NoError(t, err)
		assert.Error(t, reg.ValidateOptions(TypeName, v), bad)
	}
	_, err := reg.New(context.Background(), TypeName, capabilities.Args{Options: json.RawMessage(`{"tools": ["shell"]}`), Setup: capabilities.Setup{Dir: t.TempDir()}})
	assert.EqualError(t, err, "`shell` (the persistent tool) is not offered by agentspec: its commands outlive the run")
}

// A LocalWorkspace's env reaches every command too, below the Shell's own
// and whatever its denied_env_patterns say: a provider's key there is
// warned of as well, once, where the Shell's env does not name it already.
func TestWarningsOfTheWorkspaceEnv(t *testing.T) {
	t.Parallel()
	c, err := newFromArgs(context.Background(), capabilities.Args{
		Options: json.RawMessage(`{"sandbox": "off", "env": {"OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "y"}, "denied_env_patterns": ["ANTHROPIC_*"]}`),
		Setup:   capabilities.Setup{Dir: t.TempDir(), Env: map[string]string{"OPENAI_API_KEY": "w", "ANTHROPIC_API_KEY": "w", "HF_TOKEN": "t", "CI": "1"}},
	})
	require.NoError(t, err)
	defer c.(*Capability).Close()
	assert.Equal(t, []string{
		"env names OPENAI_API_KEY, a model provider's credential: every command, and whatever it runs, can read it; add it to denied_env_patterns or leave it out.",
		"LocalWorkspace's env names ANTHROPIC_API_KEY, a model provider's credential: every command, and whatever it runs, can read it; leave it out.",
		"LocalWorkspace's env names HF_TOKEN, a model provider's credential: every command, and whatever it runs, can read it; leave it out.",
		SandboxOffWarning,
	}, c.(*Capability).Warnings())

	// Read-only, the workspace runs no commands: nothing reaches one.
	c, err = newFromArgs(context.Background(), capabilities.Args{
		Options: json.RawMessage(`{}`),
		Setup:   capabilities.Setup{Dir: t.TempDir(), ReadOnly: true, Env: map[string]string{"HF_TOKEN": "t"}},
	})
	if err != nil { // the sandbox's refusal where commands cannot be confined
		return
	}
	defer c.(*Capability).Close()
	assert.Empty(t, c.(*Capability).Warnings())
}

package shell

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
)

// Tool names, in the order they are registered whatever Options.Tools says.
const (
	ToolRunCommand   = "run_command"
	ToolStartCommand = "start_command"
	ToolCheckCommand = "check_command"
	ToolStopCommand  = "stop_command"
	// ToolShell is the reference's persistent tool, which agentspec does
	// not offer: its commands outlive the run.
	ToolShell = "shell"
)

// DefaultToolNames are the tools offered when Options.Tools is nil.
var DefaultToolNames = []string{ToolRunCommand, ToolStartCommand, ToolCheckCommand, ToolStopCommand}

// knownToolNames are the names the reference knows, for its error text.
var knownToolNames = []string{ToolRunCommand, ToolStartCommand, ToolCheckCommand, ToolStopCommand, ToolShell}

// DefaultDeniedCommands is the denylist used when denied_commands is
// omitted and allowed_commands is empty.
var DefaultDeniedCommands = []string{"rm", "rmdir", "mkfs", "dd", "format", "shutdown", "reboot", "halt", "poweroff", "init"}

// LLMAPIKeyEnvPatterns are glob patterns of common model providers'
// credentials, as the reference exports them; not a default. A spec whose
// env names a variable matching one is warned about.
var LLMAPIKeyEnvPatterns = []string{"ANTHROPIC_*", "GATEWAY_*", "GEMINI_*", "GOOGLE_*", "OPENAI_*", "OPENROUTER_*", "PYDANTIC_AI_GATEWAY_API_KEY"}

// Defaults.
const (
	DefaultTimeout        = 30.0
	DefaultMaxTimeout     = 600.0
	DefaultMaxOutputChars = 50_000
	DefaultMaxBackground  = 4
	// MaxProcs bounds the processes of one command (D15).
	MaxProcs = 512
)

// Options configure a Shell. The JSON names are the spec's option keys;
// nil pointers mean the defaults.
type Options struct {
	// Cwd is accepted for specs written for pydantic-ai and ignored, with a
	// warning: commands start in the run's workspace.
	Cwd *string `json:"cwd"`
	// AllowedCommands, when not empty, is an allowlist of executable names
	// (the first program the command line starts, as a POSIX shell parses
	// it, compared exactly).
	AllowedCommands []string `json:"allowed_commands"`
	// DeniedCommands are executable names always refused. Nil means
	// DefaultDeniedCommands when AllowedCommands is empty, else none; an
	// empty, non-nil slice refuses none.
	DeniedCommands []string `json:"denied_commands"`
	// DeniedOperators are refused wherever they appear in the command text.
	DeniedOperators []string `json:"denied_operators"`
	// DefaultTimeout is run_command's timeout in seconds when the call
	// gives none. Default 30.
	DefaultTimeout *float64 `json:"default_timeout"`
	// MaxTimeout is the longest timeout_seconds a call may ask. Default 600.
	MaxTimeout *float64 `json:"max_timeout"`
	// MaxOutputChars caps every tool result, in characters. Default 50000.
	MaxOutputChars *json.Number `json:"max_output_chars"`
	// MaxFileBytes limits the size of each file a command writes.
	MaxFileBytes *json.Number `json:"max_file_bytes"`
	// PersistCwd keeps the directory a command cd's into (after exit 0)
	// for the next command.
	PersistCwd bool `json:"persist_cwd"`
	// AllowInteractive lets the interactive programs (vi, less, ssh, ...)
	// through the checks.
	AllowInteractive bool `json:"allow_interactive"`
	// Env is added to every command's environment.
	Env map[string]string `json:"env"`
	// DeniedEnvPatterns are fnmatch globs of names dropped from Env.
	DeniedEnvPatterns []string `json:"denied_env_patterns"`
	// Tools selects the tools. Nil means DefaultToolNames.
	Tools []string `json:"tools"`
	// Network lets commands reach the network. Default false.
	Network bool `json:"network"`
	// Sandbox is "on" (the default) or "off"; YAML's booleans mean the same.
	Sandbox any `json:"sandbox"`
	// MaxBackground bounds the background commands running at once.
	// Default 4.
	MaxBackground *int `json:"max_background"`
	// AllowGitWrites lets commands change the .git directories in the
	// workspace, for agents meant to commit.
	AllowGitWrites bool `json:"allow_git_writes"`
}

const optionsSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "cwd": {"type": ["string", "null"], "description": "Deprecated and ignored: commands start in the run's workspace."},
    "allowed_commands": {"type": "array", "items": {"type": "string"}, "description": "If not empty, only these executables (the first program a command line starts, as a shell parses it) may run."},
    "denied_commands": {"type": "array", "items": {"type": "string"}, "description": "Executables always refused. Default: rm, rmdir, mkfs, dd, format, shutdown, reboot, halt, poweroff, init (none when allowed_commands is set); [] refuses none."},
    "denied_operators": {"type": "array", "items": {"type": "string"}, "description": "Shell operators refused wherever they appear in a command, e.g. ['>', '>>', '|']."},
    "default_timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds a run_command may take when the call does not say (default 30)."},
    "max_timeout": {"type": "number", "exclusiveMinimum": 0, "description": "The longest timeout_seconds a call may ask (default 600)."},
    "max_output_chars": {"type": "integer", "description": "Cap of every tool result, in characters (default 50000)."},
    "max_file_bytes": {"type": ["integer", "null"], "description": "Largest file a command may write, in bytes."},
    "persist_cwd": {"type": "boolean", "description": "A cd in a command that exits 0 sticks for the next command."},
    "allow_interactive": {"type": "boolean", "description": "Let interactive programs (vi, less, ssh, ...) through the checks."},
    "env": {"type": ["object", "null"], "additionalProperties": {"type": "string"}, "description": "Variables added to every command's environment."},
    "denied_env_patterns": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns of names dropped from env."},
    "tools": {"type": "array", "items": {"type": "string"}, "description": "The tools to offer: run_command, start_command, check_command, stop_command (default all four)."},
    "network": {"type": "boolean", "description": "Let commands reach the network (default false)."},
    "sandbox": {"enum": ["on", "off", true, false], "description": "on (default): commands are confined to the workspace by the kernel; off: they run unconfined."},
    "max_background": {"type": "integer", "minimum": 1, "description": "Most background commands running at once (default 4)."},
    "allow_git_writes": {"type": "boolean", "description": "Let commands change the .git directories in the workspace (default false: read-only)."}
  }
}`

// config is Options checked and with the defaults filled in.
type config struct {
	policy
	defaultTimeout, maxTimeout float64
	maxOutputChars             int
	maxFileBytes               int64 // 0: none
	persistCwd                 bool
	env                        map[string]string // Env less DeniedEnvPatterns
	envNames                   []string          // the names of Env, sorted
	tools                      []string
	network, sandbox           bool
	maxBackground              int
	allowGitWrites             bool
	warnings                   []string
}

// configure checks opts with the reference's construction errors, word for
// word, and agentspec's own, and fills in the defaults.
func configure(opts Options) (*config, error) {
	c := &config{
		defaultTimeout: DefaultTimeout, maxTimeout: DefaultMaxTimeout,
		maxOutputChars: DefaultMaxOutputChars, maxBackground: DefaultMaxBackground,
		persistCwd: opts.PersistCwd, network: opts.Network, allowGitWrites: opts.AllowGitWrites,
	}
	// The reference's order, for a spec wrong in several ways: the file
	// limit and its conflict with persist_cwd, then the lists, the output
	// cap and the tools.
	if opts.MaxFileBytes != nil {
		n, err := fileBytes(*opts.MaxFileBytes)
		if err != nil {
			return nil, err
		}
		if opts.PersistCwd {
			return nil, capabilities.ArgErrorf("max_file_bytes", "max_file_bytes is not supported with persist_cwd; cwd capture writes a file in the child.")
		}
		c.maxFileBytes = n
	}
	c.allowed = slices.Clone(opts.AllowedCommands)
	c.operators = slices.Clone(opts.DeniedOperators)
	c.allowInteractive = opts.AllowInteractive
	switch {
	case opts.DeniedCommands != nil:
		c.denied = slices.Clone(opts.DeniedCommands)
	case len(opts.AllowedCommands) == 0:
		c.denied = slices.Clone(DefaultDeniedCommands)
	}
	if len(c.allowed) > 0 && len(c.denied) > 0 {
		return nil, capabilities.ArgErrorf("denied_commands", "Specify allowed_commands or denied_commands, not both.")
	}
	if opts.MaxOutputChars != nil {
		n, err := opts.MaxOutputChars.Int64()
		if err != nil || n <= 0 || n > math.MaxInt32 {
			return nil, capabilities.ArgErrorf("max_output_chars", "max_output_chars must be a positive integer.")
		}
		c.maxOutputChars = int(n)
	}
	tools, err := selectTools(opts.Tools)
	if err != nil {
		return nil, err
	}
	c.tools = tools
	if opts.MaxTimeout != nil {
		c.maxTimeout = *opts.MaxTimeout
	}
	if opts.DefaultTimeout != nil {
		c.defaultTimeout = *opts.DefaultTimeout
	}
	if c.defaultTimeout <= 0 || c.maxTimeout <= 0 {
		return nil, capabilities.ArgErrorf("default_timeout", "default_timeout and max_timeout must be greater than zero.")
	}
	if c.defaultTimeout > c.maxTimeout {
		return nil, capabilities.ArgErrorf("default_timeout", "default_timeout (%s seconds) must be at most max_timeout (%s seconds).",
			pyFloat(c.defaultTimeout), pyFloat(c.maxTimeout))
	}
	if opts.MaxBackground != nil {
		if *opts.MaxBackground < 1 {
			return nil, capabilities.ArgErrorf("max_background", "max_background must be at least 1.")
		}
		c.maxBackground = *opts.MaxBackground
	}
	if c.sandbox, err = sandboxOption(opts.Sandbox); err != nil {
		return nil, err
	}
	// Every name is checked, those denied_env_patterns drop too: the spec
	// is wrong either way.
	if err := capabilities.CheckEnv(opts.Env); err != nil {
		return nil, err
	}
	c.env, c.envNames = filterEnv(opts.Env, opts.DeniedEnvPatterns)
	if opts.Cwd != nil {
		c.warnings = append(c.warnings, cwdWarning)
	}
	c.warnings = append(c.warnings, envWarnings(c.env)...) // what denied_env_patterns leaves
	if !c.sandbox {
		c.warnings = append(c.warnings, SandboxOffWarning)
	}
	return c, nil
}

// cwdWarning is said of a Shell given a cwd, at that option (see
// Capability.OptionWarnings), in the reference's words.
const cwdWarning = "`Shell(cwd=...)` is deprecated and ignored: commands/paths start in the workspace's working directory; set it on the workspace, e.g. `LocalWorkspace('./repo')`."

// SandboxOffWarning is said on every run of a Shell with sandbox: off.
const SandboxOffWarning = "Shell sandbox is off: commands can change files outside the workspace, read secrets and reach the network"

// sandboxOption reads the sandbox option: "on", "off", true or false.
func sandboxOption(v any) (bool, error) {
	switch v {
	case nil, "on", true:
		return true, nil
	case "off", false:
		return false, nil
	}
	return false, capabilities.ArgErrorf("sandbox", "sandbox must be on or off, got %v", v)
}

// errPersistentTool refuses the reference's persistent tool.
var errPersistentTool = errors.New("`shell` (the persistent tool) is not offered by agentspec: its commands outlive the run")

// selectTools checks the tool names and returns them in registration order.
func selectTools(names []string) ([]string, error) {
	if names == nil {
		return slices.Clone(DefaultToolNames), nil
	}
	var unknown []string
	for _, n := range names {
		if !slices.Contains(knownToolNames, n) && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, capabilities.ArgErrorf("tools", "Unknown shell tools: %s. Available: %s.",
			strings.Join(unknown, ", "), strings.Join(knownToolNames, ", "))
	}
	if slices.Contains(names, ToolShell) {
		return nil, &capabilities.ArgError{Option: "tools", Msg: errPersistentTool.Error()}
	}
	var out []string
	for _, n := range DefaultToolNames {
		if slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// fileBytes reads max_file_bytes: a positive integer no larger than
// Python's sys.maxsize (the largest int64).
func fileBytes(num json.Number) (int64, error) {
	if n, err := num.Int64(); err == nil {
		if n <= 0 {
			return 0, capabilities.ArgErrorf("max_file_bytes", "max_file_bytes must be a positive integer.")
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num.String(), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), f <= 0, f != math.Trunc(f):
		return 0, capabilities.ArgErrorf("max_file_bytes", "max_file_bytes must be a positive integer.")
	case f < math.MaxInt64:
		return int64(f), nil
	}
	return 0, capabilities.ArgErrorf("max_file_bytes", "max_file_bytes must not exceed sys.maxsize.")
}

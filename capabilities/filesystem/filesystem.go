// Package filesystem is the FileSystem capability: sandboxed, pattern-filtered
// file tools for a model, all scoped to one root directory.
//
// Every path a tool receives is resolved (symlinks included) to a canonical
// location relative to the root before any I/O, checked against the allowed,
// denied and protected glob patterns, and then reached by a descriptor walk
// that never follows a symlink (see path.go), so a path that passed the checks
// cannot be swapped for one outside the root before it is opened.
//
// A write or edit never silently overwrites a file that someone else changed
// on disk since the agent last read it, and a watcher reports such changes
// as events (see watch.go).
//
// The tools, their outputs and their error messages follow the behavioural
// reference of the FileSystem capability exactly; errors the model can correct
// are *capabilities.RetryError, anything else is fatal.
package filesystem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// TypeName is the capability's name in specs.
const TypeName = "FileSystem"

// CapabilityID identifies the capability in the events it emits.
const CapabilityID = "file_system"

// Tool names.
const (
	ToolReadFile        = "read_file"
	ToolWriteFile       = "write_file"
	ToolEditFile        = "edit_file"
	ToolListDirectory   = "list_directory"
	ToolSearchFiles     = "search_files"
	ToolFindFiles       = "find_files"
	ToolCreateDirectory = "create_directory"
	ToolFileInfo        = "file_info"
	ToolListFiles       = "list_files"
	ToolGrep            = "grep"
)

var (
	// DefaultToolNames are the tools registered when Options.Tools is nil.
	DefaultToolNames = []string{
		ToolReadFile, ToolWriteFile, ToolEditFile, ToolListDirectory,
		ToolSearchFiles, ToolFindFiles, ToolCreateDirectory, ToolFileInfo,
	}
	// RipgrepToolNames are the opt-in tools that run the rg executable.
	RipgrepToolNames = []string{ToolListFiles, ToolGrep}
	// AllToolNames lists every tool in registration order: whatever order
	// Options.Tools names them in, the tools are registered in this order.
	AllToolNames = slices.Concat(DefaultToolNames, RipgrepToolNames)
	// ReadOnlyToolNames are the tools kept when Options.ReadOnly is set.
	ReadOnlyToolNames = []string{
		ToolReadFile, ToolListDirectory, ToolSearchFiles, ToolFindFiles,
		ToolFileInfo, ToolListFiles, ToolGrep,
	}
	// DefaultProtectedPatterns are the read-only patterns used when
	// Options.ProtectedPatterns is nil: repository internals, env files and
	// key material, at the top level and one directory down (decision D2);
	// then, at any depth, the files that make a program run code when a
	// folder is opened in an editor or a coding agent (.vscode, .idea,
	// .cursor, .claude, .mcp.json), at the next git command (hook managers,
	// .gitattributes filters and diff drivers, .gitmodules), in CI, or on
	// entering a directory (direnv's .envrc).
	DefaultProtectedPatterns = []string{
		".git/*", ".env", ".env.*", "*.pem", "*.key", "**/secrets*",
		"*/.git/*", "*/.env", "*/.env.*",
		"**/.vscode/*", "**/*.code-workspace", "**/.idea/*",
		"**/.mcp.json", "**/.cursor/*", "**/.claude/*",
		"**/.husky/*", "**/lefthook.*", "**/.lefthook.*", "**/lefthook-local.*", "**/.lefthook-local.*",
		"**/.pre-commit-config.yaml", "**/.pre-commit-config.yml",
		"**/.gitattributes", "**/.gitmodules",
		"**/.github/workflows/*", "**/.github/actions/*", "**/.gitlab-ci.yml", "**/.circleci/*",
		"**/.envrc",
	}
	// DefaultSecretPatterns are the secret patterns used when
	// Options.SecretPatterns is nil (decision D10): dotenv files at any depth
	// (but not their .example, .sample, .template and .dist templates), key
	// material and keystores, SSH directories, and the files where common
	// tools keep credentials (git, npm, Docker, Kubernetes, Terraform state
	// and variables, Google Cloud, PostgreSQL, Vault), all at any depth.
	DefaultSecretPatterns = []string{
		"**/.env", "**/.env.*",
		"*.pem", "*.key", "*.p12", "*.pfx",
		"**/id_rsa", "**/id_dsa", "**/id_ecdsa", "**/id_ed25519",
		"**/.ssh/*", "**/.netrc", "**/.pypirc", "**/.aws/credentials",
		"**/.git-credentials", "**/.npmrc", "**/.docker/config.json", "**/.kube/config",
		"*.tfstate", "*.tfstate.backup", "*.tfvars", "*.tfvars.json",
		"**/credentials.json", "**/service-account*.json", "*service_account*.json",
		"**/application_default_credentials.json", "**/.config/gcloud/*",
		"**/.pgpass", "**/.vault-token", "**/secrets*",
		"!**/.env*.example", "!**/.env*.sample", "!**/.env*.template", "!**/.env*.dist",
	}
)

// Default limits.
const (
	DefaultMaxReadLines = 2000
	DefaultMaxResults   = 1000
)

// Options configure a FileSystem. The JSON names are the spec's option keys.
// Zero values mean the defaults, so Options{} is a FileSystem over the
// directory New is given.
type Options struct {
	// RootDir is the sandbox root. Relative paths resolve against the
	// directory passed to New; symlinks are resolved. Default ".".
	RootDir string `json:"root_dir,omitempty"`
	// Cwd is where relative tool paths resolve from; it must lie inside
	// RootDir. Relative values resolve like RootDir. Default: RootDir.
	Cwd string `json:"cwd,omitempty"`
	// AllowedPatterns, when not empty, is an allowlist of fnmatch patterns
	// over root-relative paths.
	AllowedPatterns []string `json:"allowed_patterns,omitempty"`
	// DeniedPatterns are always rejected, together with everything below a
	// matching directory.
	DeniedPatterns []string `json:"denied_patterns,omitempty"`
	// ProtectedPatterns are readable but never written. Nil means
	// DefaultProtectedPatterns; an empty, non-nil slice disables protection.
	ProtectedPatterns []string `json:"protected_patterns"`
	// ReadOnlyPatterns is the pydantic-ai harness's newer name for
	// ProtectedPatterns; a spec may give one or the other, not both.
	ReadOnlyPatterns []string `json:"read_only_patterns"`
	// SecretPatterns are paths never shown to the model: they behave exactly
	// like DeniedPatterns (invisible to walkers and searches, unreadable,
	// unwritable). A pattern starting with "!" exempts the paths it matches
	// from the others ("!*.example" keeps ".env.example" visible). Nil means
	// DefaultSecretPatterns; an empty, non-nil slice turns them off.
	SecretPatterns []string `json:"secret_patterns"`
	// ProtectedFiles are files (absolute paths, or relative to the directory
	// New is given) that are never changed, whatever the patterns say: a
	// spec's own file and the files it names, when they lie in the root.
	// Specs cannot set it; a run fills it in.
	ProtectedFiles []string `json:"-"`
	// MaxReadLines is read_file's default window. Default 2000.
	MaxReadLines int `json:"max_read_lines,omitempty"`
	// MaxReadChars caps a whole read_file result, in characters. Zero: no cap.
	MaxReadChars int `json:"max_read_chars,omitempty"`
	// MaxListResults caps list_directory. Default 1000.
	MaxListResults int `json:"max_list_results,omitempty"`
	// MaxSearchResults caps search_files and grep. Default 1000.
	MaxSearchResults int `json:"max_search_results,omitempty"`
	// MaxFindResults caps find_files and list_files. Default 1000.
	MaxFindResults int `json:"max_find_results,omitempty"`
	// ReadOnly keeps only the tools in ReadOnlyToolNames.
	ReadOnly bool `json:"read_only,omitempty"`
	// ContentHashes reports hashes in read and write results and offers
	// expected_hash. Nil means true.
	ContentHashes *bool `json:"content_hashes,omitempty"`
	// WatchChanges refuses a write or edit without expected_hash of a file
	// changed on disk since the agent last read or wrote it, and watches the
	// directories the agent reads to report such changes as events (see
	// watch.go). Nil means true.
	WatchChanges *bool `json:"watch_changes,omitempty"`
	// RequireReadBeforeWrite refuses to change an existing file the agent has
	// neither read nor written, unless the call passes its expected_hash.
	RequireReadBeforeWrite bool `json:"require_read_before_write,omitempty"`
	// Tools selects the tools by name. Nil means DefaultToolNames.
	Tools []string `json:"tools,omitempty"`
	// MaxRetries is how many rounds in a row one of these tools may answer
	// with a correctable error before the run ends, instead of the spec's
	// retries (the harness's max_retries). Nil means the spec's.
	MaxRetries *int `json:"max_retries,omitempty"`
}

// Capability is a configured FileSystem: it hands the model its tools.
type Capability struct {
	fs       *FS
	tools    []capabilities.Tool
	warnings []capabilities.Warning
}

var (
	_ capabilities.Capability   = (*Capability)(nil)
	_ capabilities.OptionWarner = (*Capability)(nil)
)

// toolFactories builds each tool by name, one constructor per tool file.
var toolFactories = map[string]func(*FS) capabilities.Tool{
	ToolReadFile:        newReadFile,
	ToolWriteFile:       newWriteFile,
	ToolEditFile:        newEditFile,
	ToolListDirectory:   newListDirectory,
	ToolSearchFiles:     newSearchFiles,
	ToolFindFiles:       newFindFiles,
	ToolCreateDirectory: newCreateDirectory,
	ToolFileInfo:        newFileInfo,
	ToolListFiles:       newListFiles,
	ToolGrep:            newGrep,
}

// New builds a FileSystem. dir is the directory a relative RootDir or Cwd
// resolves against; empty means the process's working directory. Errors about
// one option are *capabilities.ArgError.
func New(opts Options, dir string) (*Capability, error) {
	return newCapability(opts, dir, false)
}

// newCapability is New; with protectedReal, the absolute ProtectedFiles
// come with their symlinks resolved (capabilities.Protected.Real).
func newCapability(opts Options, dir string, protectedReal bool) (*Capability, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	names, err := selectTools(opts.Tools, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	fs, err := newFS(opts, dir, protectedReal)
	if err != nil {
		return nil, err
	}
	c := &Capability{fs: fs}
	for _, msg := range rootWarnings(opts.RootDir, fs.rootDir) {
		c.warnings = append(c.warnings, capabilities.Warning{Option: "root_dir", Msg: msg})
	}
	if opts.Cwd != "" {
		// The newest pydantic-ai-harness ignores cwd; agentspec still
		// honours it, as the older versions did, so that such specs keep
		// working, and says where the setting now belongs.
		c.warnings = append(c.warnings, capabilities.Warning{Option: "cwd", Msg: "cwd is deprecated in pydantic-ai-harness, which ignores it: set the working directory on the workspace (LocalWorkspace: DIR). agentspec still resolves relative paths against it."})
	}
	for _, name := range names {
		c.tools = append(c.tools, &callGate{Tool: toolFactories[name](fs), fs: fs})
	}
	return c, nil
}

// ErrClosed is the fatal error of a tool called after Capability.Close.
var ErrClosed = errors.New("the FileSystem capability is closed")

// callGate is what every tool call passes through: it refuses calls once the
// capability is closed and delivers the external changes noticed since the
// previous call before the tool runs, so a listener sees them in order.
type callGate struct {
	capabilities.Tool
	fs *FS
}

// Unwrap returns the gated tool, so that its hints are found.
func (g *callGate) Unwrap() capabilities.Tool { return g.Tool }

func (g *callGate) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if g.fs.closed.Load() {
		return "", fmt.Errorf("filesystem: %s: %w", g.Name(), ErrClosed)
	}
	if err := g.fs.deliverChanges(ctx); err != nil {
		return "", err
	}
	return g.Tool.Call(ctx, args)
}

// Tools returns the selected tools, in AllToolNames order.
func (c *Capability) Tools(context.Context) ([]capabilities.Tool, error) {
	return slices.Clone(c.tools), nil
}

// MaxRetries reports Options.MaxRetries, for the run's retry budget.
func (c *Capability) MaxRetries() (int, bool) {
	if r := c.fs.opts.MaxRetries; r != nil {
		return *r, true
	}
	return 0, false
}

// Warnings returns what the user should hear about this configuration
// before a run, although it is valid: a root that puts far more than a
// project in the model's reach (the root of the file system, the user's home
// directory or a directory above it), and that cwd is deprecated. Each is one
// sentence, without a position in the spec; nil when there is nothing to say.
func (c *Capability) Warnings() []string {
	var msgs []string
	for _, w := range c.warnings {
		msgs = append(msgs, w.Msg)
	}
	return msgs
}

// OptionWarnings are the Warnings, those of root_dir and cwd said of
// those options.
func (c *Capability) OptionWarnings() []capabilities.Warning { return slices.Clone(c.warnings) }

// rootWarnings warns of a root, given as given and real once resolved, that
// is the root of a file system, the user's home directory (resolved) or a
// directory holding it.
func rootWarnings(given, real string) []string {
	const reach = "the model can reach every file below it that this process may; give the project's directory instead"
	if filepath.Dir(real) == real {
		return []string{fmt.Sprintf("root_dir %s is the root of the file system: %s.", pyRepr(given), reach)}
	}
	home := realHome()
	switch {
	case home == "":
		return nil
	case home == real:
		return []string{fmt.Sprintf("root_dir %s is your home directory: %s.", pyRepr(given), reach)}
	case within(home, real):
		return []string{fmt.Sprintf("root_dir %s holds your home directory: %s.", pyRepr(given), reach)}
	}
	return nil
}

// realHome is the user's home directory with its symlinks resolved, or ""
// when there is none.
func realHome() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(home); err == nil {
		return r
	}
	return filepath.Clean(home)
}

// RootDir returns the absolute, symlink-resolved root directory.
func (c *Capability) RootDir() string { return c.fs.rootDir }

// Reach is the root directory, written to when any of the tools offered
// changes files. The ripgrep tools start rg, but with arguments the
// capability alone chooses, so no program is named here.
func (c *Capability) Reach() capabilities.Reach {
	write := slices.ContainsFunc(c.tools, func(t capabilities.Tool) bool { return !capabilities.HintsOf(t).ReadOnly })
	return capabilities.Reach{Paths: []capabilities.PathReach{{Path: c.fs.rootDir, Write: write}}}
}

// Close stops the change watcher, releasing its watches, and the descriptors
// held on the root directory. Closing twice is harmless; tools called after
// Close fail with ErrClosed.
func (c *Capability) Close() error { return c.fs.Close() }

// Watches returns the number of directories the change watcher watches now:
// zero before the first read or listing, with WatchChanges off, and after
// Close.
func (c *Capability) Watches() int { return c.fs.changes.watches() }

// normalize fills in defaults and rejects limits that are not positive.
func (o *Options) normalize() error {
	if o.RootDir == "" {
		o.RootDir = "."
	}
	if o.ReadOnlyPatterns != nil {
		if o.ProtectedPatterns != nil {
			return capabilities.ArgErrorf("read_only_patterns",
				"read_only_patterns and protected_patterns are two names of one option; give only one")
		}
		o.ProtectedPatterns, o.ReadOnlyPatterns = o.ReadOnlyPatterns, nil
	}
	if o.ProtectedPatterns == nil {
		o.ProtectedPatterns = DefaultProtectedPatterns
	}
	if o.SecretPatterns == nil {
		o.SecretPatterns = DefaultSecretPatterns
	}
	if o.Tools == nil {
		o.Tools = DefaultToolNames
	}
	yes := true
	if o.ContentHashes == nil {
		o.ContentHashes = &yes
	}
	if o.WatchChanges == nil {
		o.WatchChanges = &yes
	}
	limits := []struct {
		name string
		v    *int
		def  int
	}{
		{"max_read_lines", &o.MaxReadLines, DefaultMaxReadLines},
		{"max_read_chars", &o.MaxReadChars, 0},
		{"max_list_results", &o.MaxListResults, DefaultMaxResults},
		{"max_search_results", &o.MaxSearchResults, DefaultMaxResults},
		{"max_find_results", &o.MaxFindResults, DefaultMaxResults},
	}
	for _, l := range limits {
		switch {
		case *l.v < 0:
			return capabilities.ArgErrorf(l.name, "%s must be a positive integer, got %d", l.name, *l.v)
		case *l.v == 0:
			*l.v = l.def
		}
	}
	return nil
}

// selectTools validates the requested names and returns the tools to
// register, in AllToolNames order.
func selectTools(requested []string, readOnly bool) ([]string, error) {
	unknown := slices.DeleteFunc(slices.Clone(requested), func(n string) bool { return slices.Contains(AllToolNames, n) })
	if len(unknown) > 0 {
		slices.Sort(unknown)
		unknown = slices.Compact(unknown)
		return nil, capabilities.ArgErrorf("tools", "Unknown filesystem tools: %s. Available: %s.",
			strings.Join(unknown, ", "), strings.Join(AllToolNames, ", "))
	}
	var names []string
	for _, n := range AllToolNames {
		if slices.Contains(requested, n) && (!readOnly || slices.Contains(ReadOnlyToolNames, n)) {
			names = append(names, n)
		}
	}
	return names, nil
}

// rootPaths resolves the configured root and cwd to absolute real paths.
// The root may come back open already, as d (see openRealDir); the caller
// then owns it.
func rootPaths(opts Options, dir string) (root, alias, cwd string, d *sandbox.Dir, err error) {
	if dir, err = filepath.Abs(dir); err != nil { // "" is the working directory
		return "", "", "", nil, fmt.Errorf("filesystem: %w", err)
	}
	root, alias, d, err = openRealDir(opts.RootDir, dir)
	if err != nil {
		return "", "", "", nil, capabilities.ArgErrorf("root_dir", "root_dir %s %s.", pyRepr(opts.RootDir), err)
	}
	if opts.Cwd == "" {
		return root, alias, root, d, nil
	}
	cwd, _, err = realDir(opts.Cwd, dir)
	switch {
	case err != nil:
		err = capabilities.ArgErrorf("cwd", "cwd %s %s.", pyRepr(opts.Cwd), err)
	case !within(cwd, root):
		// Worded as the reference words it: the cwd resolved, the root as
		// given. The message is the user's, never the model's.
		err = capabilities.ArgErrorf("cwd", "cwd %s is outside root_dir %s.", pyRepr(cwd), pyRepr(opts.RootDir))
	default:
		return root, alias, cwd, d, nil
	}
	if d != nil {
		d.Close()
	}
	return "", "", "", nil, err
}

// openRealDir is realDir for the root, which is opened next: where the
// kernel names an open directory (sandbox.OpenReal), the directory is opened
// first and its real path read back, in two system calls whatever its
// depth, and d holds it. Otherwise d is nil and the caller opens real.
func openRealDir(p, dir string) (real, alias string, d *sandbox.Dir, err error) {
	abs := absUnder(p, dir)
	if d, real, ok := sandbox.OpenReal(abs); ok {
		return real, filepath.Clean(abs), d, nil
	}
	real, alias, err = realDir(p, dir)
	return real, alias, nil, err
}

// absUnder is p made absolute against dir, joined without cleaning: "link/.."
// must go to the parent of the link's target, as realpath does, not back to
// dir.
func absUnder(p, dir string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return dir + string(filepath.Separator) + p
}

var (
	errNoDir    = errors.New("does not exist")
	errNotADir  = errors.New("is not a directory")
	errCantRead = errors.New("cannot be resolved")
)

// realDir resolves p (relative to dir) to the real path of an existing
// directory. alias is the lexically cleaned absolute path, which absolute
// tool paths may also use to name the root. The error says what is wrong in
// words that carry no host path.
func realDir(p, dir string) (real, alias string, err error) {
	abs := absUnder(p, dir)
	real, err = filepath.EvalSymlinks(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", "", errNoDir
	case err != nil:
		return "", "", errCantRead
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", "", errCantRead
	}
	if !st.IsDir() {
		return "", "", errNotADir
	}
	return real, filepath.Clean(abs), nil
}

// within reports whether p is root or below it, component-wise.
var within = sandbox.Within

// Type is the FileSystem capability type, for a registry.
func Type() capabilities.Type {
	return capabilities.Type{
		Name:        TypeName,
		Description: "Sandboxed, pattern-filtered file tools (read, write, edit, list, search) scoped to one root directory.",
		Schema:      json.RawMessage(optionsSchema),
		Positional:  "root_dir",
		Deprecated: map[string]string{
			"protected_patterns": "the pydantic-ai harness has renamed it read_only_patterns, and warns of the old name; agentspec reads both the same: write read_only_patterns",
		},
		New: func(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
			var opts Options
			if err := args.Decode(&opts); err != nil {
				return nil, optionError(err)
			}
			opts.ProtectedFiles = args.Protected.Real()
			// A read-only workspace (LocalWorkspace's read_only) leaves
			// every FileSystem its read tools alone.
			opts.ReadOnly = opts.ReadOnly || args.ReadOnly
			return newCapability(opts, args.Dir, true)
		},
	}
}

// optionError points a decoding failure at the option it concerns.
func optionError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		opt, _, _ := strings.Cut(te.Field, ".")
		return capabilities.ArgErrorf(opt, "%s: expected %s, got %s", opt, jsonKind(te.Type), te.Value)
	}
	return err
}

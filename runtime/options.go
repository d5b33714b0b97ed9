package runtime

import (
	"context"
	"maps"
	"net/http"
	"path/filepath"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/cache"
	"github.com/agentspec/agentspec/runtime/providers"
)

// Option configures a run.
type Option func(*config)

type config struct {
	input      string
	vars       map[string]string
	model      llms.Model
	dialect    Dialect
	listeners  []capabilities.Listener
	validators []Validator
	workspace  string
	registry   *capabilities.Registry
	extra      []capabilities.Capability
	providers  providers.Options
	stream     func(ctx context.Context, text string) error
	cache      *cache.Cache
	noCache    bool
	cacheName  string
	transport  http.RoundTripper
	capChecks  []func(context.Context, []capabilities.Capability) error
	own        []string // WithOwnFiles, absolute
	protect    []string // WithProtectedFiles, absolute
	script     *Script  // WithScript's
	scriptErr  error    // WithScript's: why LoadScript could not read it
}

// WithInput sets the user message. Without one, the instructions alone drive
// the run.
func WithInput(input string) Option { return func(c *config) { c.input = input } }

// WithVars sets the values of the instructions' {{var}} placeholders. Later
// calls add to (and override) earlier ones.
func WithVars(vars map[string]string) Option {
	return func(c *config) {
		if c.vars == nil {
			c.vars = map[string]string{}
		}
		maps.Copy(c.vars, vars)
	}
}

// WithModel runs with m instead of the model the spec names. dialect says how
// to replay the conversation to it; an empty dialect means DialectOpenAI.
//
// The spec's cache key does not apply to such a run, since the key cannot
// tell one model from another: it runs uncached unless WithCache is given
// too, and the key then names the spec's model reference, not m.
func WithModel(m llms.Model, dialect Dialect) Option {
	return func(c *config) { c.model, c.dialect = m, dialect }
}

// WithListener adds a listener for the run's events and the capabilities'
// events. Listeners are called in the order they were added; one that returns
// an error ends the run.
func WithListener(l capabilities.Listener) Option {
	return func(c *config) {
		if l != nil {
			c.listeners = append(c.listeners, l)
		}
	}
}

// WithValidator adds a check of the final answer (see Validator).
func WithValidator(v Validator) Option {
	return func(c *config) {
		if v != nil {
			c.validators = append(c.validators, v)
		}
	}
}

// WithCapabilityCheck has check judge the capabilities the run built from
// the spec (in the spec's order; not those of WithCapabilities) before any
// of them is used. A host that confines runs, such as a queue worker, so
// judges what the run will use, not a separate build of the same spec that
// a workspace changed in between would make differently. An error ends the
// run before its first model request, the capabilities closed.
func WithCapabilityCheck(check func(ctx context.Context, caps []capabilities.Capability) error) Option {
	return func(c *config) {
		if check != nil {
			c.capChecks = append(c.capChecks, check)
		}
	}
}

// WithOwnFiles names files the caller writes for the run as it goes, such
// as its events log or a recording, or directories of them: no capability
// of the run may change them, as none may change the spec's own files, and
// the cache key leaves them out of the workspace's input files, which they
// would otherwise change with every run. Relative paths are made absolute
// against the process's working directory.
func WithOwnFiles(paths ...string) Option {
	return func(c *config) {
		for _, p := range paths {
			if p == "" {
				continue
			}
			if abs, err := filepath.Abs(p); err == nil {
				c.own = append(c.own, abs)
			}
		}
	}
}

// WithProtectedFiles names files, or directories, that no capability of
// the run may change, as none may change the spec's own files, while the
// cache key still covers them where input_globs match them: the files of
// the program the run is part of, such as a pipeline's file and its other
// steps' specs, scripts and caches. Relative paths are made absolute
// against the process's working directory when the option is made, so that
// one made once serves every run.
func WithProtectedFiles(paths ...string) Option {
	var files []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			files = append(files, abs)
		}
	}
	return func(c *config) { c.protect = append(c.protect, files...) }
}

// WithScript gives the script file of the spec's scripted model as
// LoadScript read it, or the error it returned: the run answers from it,
// and its cache key covers its bytes, in place of what the file holds when
// the run starts; with the error, a run that would answer from the script
// fails with it. A caller running one spec many times (a pipeline's jobs)
// reads the file once, so that an edit while they run changes none of
// them: runtime.WithScript(runtime.LoadScript(s)). A run of a spec whose
// model names another file fails; one whose model is no script, or that is
// given WithModel, ignores it.
func WithScript(sc *Script, err error) Option {
	return func(c *config) { c.script, c.scriptErr = sc, err }
}

// WithWorkspace sets the directory the capabilities' relative paths (such as
// FileSystem's root_dir) resolve against. The default is the process's
// working directory.
func WithWorkspace(dir string) Option { return func(c *config) { c.workspace = dir } }

// WithRegistry builds the spec's capabilities from r instead of
// capabilities.Default().
func WithRegistry(r *capabilities.Registry) Option { return func(c *config) { c.registry = r } }

// WithHTTPTransport has the spec's capabilities reach their remote servers
// (an MCP server named by url) through rt: a proxy, a transport with the
// organisation's trust roots, or a local server standing in for the spec's
// host in a test. Without it they use http.DefaultTransport. Providers
// have their own, in WithProviderOptions.
func WithHTTPTransport(rt http.RoundTripper) Option { return func(c *config) { c.transport = rt } }

// WithCapabilities gives the model the tools of caps besides the spec's
// capabilities. They belong to the caller: the run does not close them.
//
// As with WithModel, the spec's cache key does not apply to such a run: the
// key cannot see what caps are, so only WithCache turns the cache on.
func WithCapabilities(caps ...capabilities.Capability) Option {
	return func(c *config) { c.extra = append(c.extra, caps...) }
}

// WithProviderOptions sets how a provider's model is built (its HTTP
// transport, such as a providers.Recorder or Replayer, and its environment).
// It has no effect with WithModel or a script model.
func WithProviderOptions(o providers.Options) Option { return func(c *config) { c.providers = o } }

// WithStreaming streams the model's text to f as it is generated, every turn
// of the run included (the text before tool calls too). The model is asked to
// stream its responses; the tool-call deltas some clients pass along with
// the text are filtered out, and thinking never reaches f. A response whose
// stream fails with an error event that is retried (overloaded, a server
// error) streams again from its start. The result is the same as without
// streaming. An error from f ends the run.
func WithStreaming(f func(ctx context.Context, text string) error) Option {
	return func(c *config) { c.stream = f }
}

// WithCache caches the run's result in c, whatever the spec's cache key
// says; a nil c is WithoutCache. Without either option the spec decides:
// `cache: true` is the default directory (cache.DefaultDir), `cache: {dir:
// PATH}` a directory relative to the spec file's.
//
// What the cache would report through its WithWarn (an unreadable entry, a
// hit whose expected output files are missing) is reported to the run's
// listeners as CacheWarning events instead; c's own WithWarn is not called.
//
// The key covers the spec's document and its model reference (a script
// model's file content included), never a model given with WithModel or
// capabilities given with WithCapabilities: with either, the spec's cache key
// is ignored, and WithCache is the caller's word that they answer alike from
// run to run.
func WithCache(c *cache.Cache) Option {
	return func(cfg *config) { cfg.cache, cfg.noCache = c, c == nil }
}

// WithoutCache turns the cache off for the run, whatever the spec says.
func WithoutCache() Option {
	return func(cfg *config) { cfg.cache, cfg.noCache = nil, true }
}

// WithCacheWorkspaceName makes the cache key name the workspace by name
// instead of by its real path (cache.KeyInput.WorkspaceName): for a
// workspace that is the same one wherever it is found, such as a queue job's,
// which each worker mounts or unpacks at a path of its own. The key still
// covers the files the run finds there.
func WithCacheWorkspaceName(name string) Option {
	return func(cfg *config) { cfg.cacheName = name }
}

package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// EnvDir is the environment variable that overrides the default cache
// directory.
const EnvDir = "AGENTSPEC_CACHE_DIR"

// Sentinels, for errors.Is.
var (
	// ErrNotCacheable: Store refused an entry (the run failed or produced no
	// output).
	ErrNotCacheable = errors.New("not cacheable")
	// ErrCorrupt: a stored entry could not be read back; it was a miss.
	ErrCorrupt = errors.New("corrupt cache entry")
	// ErrOutputsMissing: a stored entry was found but files the run must
	// leave in the workspace are missing; it was a miss.
	ErrOutputsMissing = errors.New("expected output files are missing")
	// ErrNotCache: Stats or Clear was pointed at a directory that exists but
	// holds no cache marker.
	ErrNotCache = errors.New("not an agentspec cache directory")
)

// Entry is the result of one successful run, as stored.
type Entry struct {
	// Set by the caller.

	// Output is the model's final answer. Store refuses a blank one.
	Output string `json:"output"`
	// JSON is the answer's JSON value when the spec has an output_schema. It
	// is stored compacted.
	JSON json.RawMessage `json:"json,omitempty"`
	// Usage is what the run consumed.
	Usage Usage `json:"usage"`
	// SpecName is the spec's name, for Stats.
	SpecName string `json:"spec_name,omitempty"`
	// Err is the run's error. Store refuses an entry that has one, so a
	// caller can hand over a run's outcome as it came; it is never stored.
	Err error `json:"-"`

	// Filled in by Store.

	Key         string      `json:"key"`
	Model       string      `json:"model"`
	Workspace   string      `json:"workspace,omitempty"` // the real path
	Created     time.Time   `json:"created"`
	Ingredients Ingredients `json:"ingredients"`
}

// Usage counts what a run consumed: the counts of runtime.Usage but its
// cache, reasoning and unreported ones, which a caller copies over field by
// field (runtime's cached runs do).
type Usage struct {
	Requests     int           `json:"requests"`
	InputTokens  int           `json:"input_tokens"`
	OutputTokens int           `json:"output_tokens"`
	ToolCalls    int           `json:"tool_calls"`
	Elapsed      time.Duration `json:"elapsed_ns"`
}

// record is an entry file's content.
type record struct {
	Version int `json:"version"`
	Entry
}

// Cache is a result cache in one directory. It holds no state besides its
// configuration, whether it has made its directory, and where in its logs
// the entries lie, which it checks against the files; it is safe for
// concurrent use, by several processes too.
type Cache struct {
	dir     string
	backend Backend // nil: the directory
	warn    func(error)
	now     func() time.Time
	logs    *logIndex    // what is known of the logs, shared by the views With makes
	real    *resolvedDir // the real path of dir, shared by the views With makes
}

// resolvedDir is a cache directory's real path, resolved once.
type resolvedDir struct {
	once sync.Once
	path string
}

// Option configures a Cache.
type Option func(*Cache)

// WithWarn reports what the caller may want to tell a person: an entry that
// could not be read (errors.Is ErrCorrupt) or one whose expected output files
// are missing (ErrOutputsMissing). Both are misses. Without it they pass
// silently; the package never prints.
func WithWarn(f func(error)) Option {
	return func(c *Cache) {
		if f != nil {
			c.warn = f
		}
	}
}

// WithClock sets the clock that stamps entries; the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *Cache) {
		if now != nil {
			c.now = now
		}
	}
}

// New returns the cache in dir, or in DefaultDir when dir is "" (what
// `cache: true` means). A relative dir is taken from the current directory.
// New touches nothing on disk: the directory and its marker are created by
// the first Store.
func New(dir string, opts ...Option) (*Cache, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	c := &Cache{dir: abs, warn: func(error) {}, now: timeNow, logs: &logIndex{}, real: &resolvedDir{}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// DefaultDir is $AGENTSPEC_CACHE_DIR when set, else agentspec under the
// user's cache directory (os.UserCacheDir: ~/.cache on Linux,
// ~/Library/Caches on macOS, %LocalAppData% on Windows).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("default cache directory: %w (set %s)", err, EnvDir)
	}
	return filepath.Join(base, "agentspec"), nil
}

// Dir is the cache's directory, absolute; "" for a cache kept elsewhere
// (WithBackend).
func (c *Cache) Dir() string { return c.dir }

// realDir is the real path of the cache's directory (see realPath), "" for
// a cache kept elsewhere or one whose path cannot be resolved.
func (c *Cache) realDir() string {
	if c.dir == "" || c.real == nil {
		return ""
	}
	c.real.once.Do(func() {
		if p, err := realPath(c.dir); err == nil {
			c.real.path = p
		}
	})
	return c.real.path
}

// With returns a copy of c with opts applied on top of its own, for instance
// a view that reports its warnings to one caller: c.With(WithWarn(f)).
func (c *Cache) With(opts ...Option) *Cache {
	v := *c
	for _, o := range opts {
		o(&v)
	}
	return &v
}

// Lookup computes the key of k over the workspace's files as they are now and
// returns the entry stored under it. ok is false on a miss: no entry, an
// entry that cannot be read (it is removed), or one whose expected output
// files are missing from the workspace; the last two are reported through
// WithWarn. key is returned in every case but an error, for the caller to log
// or salt with; it is not necessarily the key Store will use.
func (c *Cache) Lookup(ctx context.Context, k KeyInput) (entry *Entry, key string, ok bool, err error) {
	key, ing, err := keyIn(ctx, k, c.realDir())
	if err != nil {
		return nil, "", false, err
	}
	e, err := c.read(ctx, key)
	if err != nil || e == nil {
		return nil, key, false, err
	}
	if missing := missingOutputs(ing.Workspace, k.ExpectedOutputFiles); len(missing) > 0 {
		c.warn(fmt.Errorf("cache entry %s: %w: %s", short(key), ErrOutputsMissing, strings.Join(missing, ", ")))
		return nil, key, false, nil
	}
	return e, key, true, nil
}

// Store records a successful run. It computes the key of k again, over the
// workspace's files as they are after the run, and writes e under it,
// replacing any entry there; it returns that key. It fills in e's Key,
// Model, Workspace, Created and Ingredients.
//
// An entry that carries the run's error, has a blank Output or JSON that is
// not JSON is refused with ErrNotCacheable: a failed run is never replayed.
func (c *Cache) Store(ctx context.Context, k KeyInput, e Entry) (key string, err error) {
	switch {
	case e.Err != nil:
		return "", fmt.Errorf("%w: the run failed: %w", ErrNotCacheable, e.Err)
	case strings.TrimSpace(e.Output) == "":
		return "", fmt.Errorf("%w: the run produced no output", ErrNotCacheable)
	case e.JSON != nil && !json.Valid(e.JSON):
		return "", fmt.Errorf("%w: the run's JSON output is not valid JSON", ErrNotCacheable)
	}
	key, ing, err := keyIn(ctx, k, c.realDir())
	if err != nil {
		return "", err
	}
	e.Key, e.Model, e.Workspace, e.Ingredients = key, k.Model, ing.Workspace, ing
	e.Created = c.now().UTC()
	data, err := json.Marshal(record{Version: ProtocolVersion, Entry: e})
	if err != nil {
		return "", fmt.Errorf("cache store: %w", err)
	}
	if err := c.write(ctx, key, data); err != nil {
		return "", fmt.Errorf("cache store: %w", err)
	}
	return key, nil
}

// read returns the entry stored under key, or nil on a miss: from its log,
// else from its file where an earlier version wrote it. A corrupt entry is
// reported, removed and a miss.
func (c *Cache) read(ctx context.Context, key string) (*Entry, error) {
	if c.backend != nil {
		return c.readBackend(ctx, key)
	}
	if e, err := c.readLog(key); e != nil || err != nil {
		if err != nil {
			err = fmt.Errorf("cache lookup: %w", err)
		}
		return e, err
	}
	p := c.entryPath(key)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache lookup: %w", err)
	}
	e, err := decode(data, key)
	if err != nil {
		c.warn(fmt.Errorf("cache entry %s: %w: %w", short(key), ErrCorrupt, err))
		// Another process may have just renamed a good entry into place; it is
		// only lost work, and the run about to happen writes it again.
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			c.warn(fmt.Errorf("cache entry %s: removing: %w", short(key), rerr))
		}
		return nil, nil
	}
	return e, nil
}

// decode parses an entry file and checks that it is whole and current. key is
// the key it is filed under, or "" to accept any.
func decode(data []byte, key string) (*Entry, error) {
	var r record
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	switch {
	case r.Version != ProtocolVersion:
		return nil, fmt.Errorf("format version %d, want %d", r.Version, ProtocolVersion)
	case key != "" && r.Key != key:
		return nil, errors.New("filed under another key")
	case strings.TrimSpace(r.Output) == "":
		return nil, errors.New("no output")
	}
	return &r.Entry, nil
}

// short abbreviates a key for messages.
func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/cache"
	"github.com/agentspec/agentspec/spec"
)

// resultCache is the result cache as runs use it: the flow package cache
// documents, with its warnings turned into events.
type resultCache struct {
	cache     *cache.Cache // Store goes through the caller's cache, its clock included
	doc       []byte       // the spec's meaning, for the key
	model     string
	input     string
	vars      map[string]string
	globs     []string
	expected  []string
	own       []string // WithOwnFiles: left out of the input files
	specName  string
	wsName    string
	listeners []capabilities.Listener
	// judge is what a fresh answer must pass: an entry is replayed only if
	// its answer passes it too, since whoever can write to the cache (a
	// shared bucket, a directory) could have written anything.
	judge judge
}

// newResultCache returns the cache runs of s use, or nil when caching is off.
// model is the model ingredient of the key; schema and checks are the
// plan's, which a replayed answer must pass as a fresh one does.
//
// The spec's cache key alone does not turn the cache on for a run given a
// model (WithModel) or capabilities (WithCapabilities): the key cannot see
// what they are, so a changed model or tool would replay stale answers. Only
// WithCache, the caller vouching for them, does.
func newResultCache(s *spec.Spec, cfg config, model string, schema *outputSchema, checks *checkSet) (*resultCache, error) {
	c := cfg.cache
	switch {
	case cfg.noCache:
		return nil, nil
	case c == nil && (s.Cache == nil || cfg.model != nil || len(cfg.extra) > 0):
		return nil, nil
	case c == nil:
		dir := s.Cache.Dir
		if dir != "" && !filepath.IsAbs(dir) && s.File != "" {
			// Like a script model's file, a cache directory is the spec's
			// neighbour, wherever agentspec runs from.
			dir = filepath.Join(filepath.Dir(s.File), dir)
		}
		var err error
		if c, err = cache.New(dir); err != nil {
			return nil, err
		}
	}
	doc, err := specDocument(s)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &resultCache{
		judge:     judge{schema: schema, checks: checks, validators: cfg.validators},
		cache:     c,
		doc:       doc,
		model:     model,
		input:     cfg.input,
		vars:      cfg.vars,
		globs:     s.Workspace.InputGlobs,
		expected:  s.Workspace.ExpectedOutputFiles,
		own:       cfg.own,
		specName:  s.Name,
		wsName:    cfg.cacheName,
		listeners: cfg.listeners,
	}, nil
}

// specDocument is what the spec means, as JSON: its typed fields, which are
// what a run reads, without the file positions and the warnings that carry
// them (they move with every comment and say nothing about meaning). A
// loaded spec is keyed so too, not on its Document: a program that changes
// a field of a loaded spec before it runs it changes the run, and a key
// over the document as loaded replayed the answer of the spec as it was.
//
// The spec is encoded as it is, not copied: other runs of it may be
// writing its unexported fields meanwhile, which encoding/json never reads.
// Every exported field is thus in the key, one added later included.
func specDocument(s *spec.Spec) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	delete(doc, "File")
	delete(doc, "Document")
	delete(doc, "Warnings")
	caps, _ := doc["Capabilities"].([]any)
	ws, _ := doc["Workspace"].(map[string]any)
	checks, _ := ws["Checks"].([]any)
	for _, e := range append(caps, checks...) {
		if m, ok := e.(map[string]any); ok {
			delete(m, "Pos")
		}
	}
	return json.Marshal(doc)
}

// cacheLookup is the outcome of a lookup, kept for the store that follows a
// miss.
type cacheLookup struct {
	key      cache.KeyInput
	hit      *Result // nil on a miss
	storable bool    // false when the lookup itself failed: a store would fail alike
}

// lookup looks the run up in the cache. Problems of the cache are reported
// as CacheWarning events and make a miss; the error is a listener's, or the
// run's context ending.
func (rc *resultCache) lookup(ctx context.Context, workspace string) (cacheLookup, error) {
	lk := cacheLookup{key: cache.KeyInput{
		Spec:                rc.doc,
		Model:               rc.model,
		Input:               rc.input,
		Vars:                rc.vars,
		Workspace:           workspace,
		WorkspaceName:       rc.wsName,
		InputGlobs:          rc.globs,
		ExpectedOutputFiles: rc.expected,
		Exclude:             rc.own,
	}}
	// A view of the same directory whose warnings this run collects: the
	// cache calls its warn function, which has no way to reach the run's
	// listeners or tell runs apart.
	var warnings []error
	view := rc.cache.With(cache.WithWarn(func(err error) { warnings = append(warnings, err) }))
	entry, key, ok, err := view.Lookup(ctx, lk.key)
	for _, w := range warnings {
		if err := rc.warn(ctx, w); err != nil {
			return lk, err
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return lk, interrupted(ctx)
		}
		return lk, rc.warn(ctx, err)
	}
	lk.storable = true
	if !ok {
		return lk, nil
	}
	hit := &Result{Cached: true, CacheKey: key}
	why, err := rc.replayable(ctx, workspace, entry, hit)
	if err != nil {
		return lk, err
	}
	if why != "" {
		// A miss: the run answers afresh, and its result replaces the entry.
		return lk, rc.warn(ctx, fmt.Errorf("cache entry %s: refused, %s; running again", shortKey(key), why))
	}
	if err := emitTo(ctx, rc.listeners, CacheHit{Key: key, Created: entry.Created}); err != nil {
		return lk, err
	}
	lk.hit = hit
	return lk, nil
}

// replayable judges a stored answer into hit as a fresh one is judged, and
// says why it may not be replayed, or "" when it may. Its JSON must be what
// the output schema makes of its answer (none without one). The error is a
// validator's fatal one, which ends the run as it would a fresh answer's.
func (rc *resultCache) replayable(ctx context.Context, workspace string, entry *cache.Entry, hit *Result) (string, error) {
	j := rc.judge
	j.workspace = workspace
	rej, err := j.answer(ctx, hit, entry.Output, nil)
	if err != nil {
		return "", err
	}
	if rej != nil {
		switch rej.kind {
		case RetryOutput:
			return "its answer does not pass the output_schema: " + rej.feedback, nil
		case RetryCheck:
			return "the workspace fails the spec's checks: " + rej.checks[0].Error(), nil
		default:
			return "a validator rejects its answer: " + rej.feedback, nil
		}
	}
	var stored bytes.Buffer
	if len(entry.JSON) > 0 && json.Compact(&stored, entry.JSON) != nil {
		stored.Reset()
		stored.WriteString("not JSON")
	}
	switch {
	case j.schema == nil && len(entry.JSON) > 0:
		return "it carries a JSON output and the spec has no output_schema", nil
	case j.schema != nil && !bytes.Equal(stored.Bytes(), hit.JSON):
		return "its JSON output is not the JSON of its answer", nil
	}
	return "", nil
}

// shortKey abbreviates a key for messages, as the cache does.
func shortKey(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

// store files a successful run's result under the key of the workspace as
// the run left it, and returns that key. A store that fails is a warning:
// the result is in hand all the same.
func (rc *resultCache) store(ctx context.Context, lk cacheLookup, res *Result) (string, error) {
	if !lk.storable || ctx.Err() != nil {
		// An interrupted run that still finished is not stored: hashing the
		// input files again would hold up the stop.
		return "", nil
	}
	key, err := rc.cache.Store(ctx, lk.key, cache.Entry{
		Output: res.Output,
		JSON:   res.JSON,
		Usage: cache.Usage{Requests: res.Usage.Requests, InputTokens: res.Usage.InputTokens,
			OutputTokens: res.Usage.OutputTokens, ToolCalls: res.Usage.ToolCalls, Elapsed: res.Usage.Elapsed},
		SpecName: rc.specName,
	})
	if err != nil {
		if errors.Is(err, cache.ErrNotCacheable) {
			err = fmt.Errorf("the result was not cached: %w", err)
		}
		return "", rc.warn(ctx, err)
	}
	return key, nil
}

func (rc *resultCache) warn(ctx context.Context, err error) error {
	return emitTo(ctx, rc.listeners, CacheWarning{Message: err.Error()})
}

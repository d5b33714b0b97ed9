package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/spec"
)

// Job is one run, as it travels to a worker.
type Job struct {
	ID    string `json:"id"` // <batch>.<index>
	Batch string `json:"batch"`
	Index int    `json:"index"`
	// Label is the workspace as the submitter named it; results carry it
	// back.
	Label string `json:"label"`
	// Spec is the spec and the files it names.
	Spec Bundle `json:"spec"`
	// Input and Vars are the run's user message and instruction variables.
	Input string            `json:"input,omitempty"`
	Vars  map[string]string `json:"vars,omitempty"`
	// NoCache runs without the cache, whatever the spec says. Cache runs
	// with the worker's cache though the spec has no cache: of its own, as
	// a pipeline's cache: asks for the steps that say nothing.
	NoCache bool `json:"no_cache,omitempty"`
	Cache   bool `json:"cache,omitempty"`
	// InputGlobs are added to the spec's input_globs for this job.
	InputGlobs []string `json:"input_globs,omitempty"`
	// Workspace is the job's directory relative to the worker's workspace
	// root, on storage the workers share; "" with Ship.
	Workspace string `json:"workspace,omitempty"`
	// Ship names the object holding the workspace, for a job that brings
	// its own.
	Ship *Shipped `json:"ship,omitempty"`
}

// Shipped is a workspace sent with the job.
type Shipped struct {
	Object string `json:"object"` // in the queue's object store
	// Origin identifies the workspace for the cache key: the submitter's
	// host and the directory's absolute path there.
	Origin string `json:"origin"`
	// How big an archive may be is for each side to say: the worker takes
	// and sends back no more than its WorkerOptions.ShipMax, the submitter
	// its BatchOptions.ShipMax, whatever the other claims.
}

// Bundle is a spec with the files it names, so that a worker needs none of
// the submitter's disk.
type Bundle struct {
	Name string `json:"name"` // the spec file's base name
	Data []byte `json:"data"`
	// Files are the files the spec names (a script model's turns), keyed by
	// their path relative to the spec's directory.
	Files map[string][]byte `json:"files,omitempty"`
	// Pointer, for a spec written inline in another file (a pipeline's
	// step), is where it lies in Data, as a JSON pointer
	// ("/steps/fix/spec"); "" when Data is the spec.
	Pointer string `json:"pointer,omitempty"`
	// Model, when set, replaces the spec's model (--model).
	Model string `json:"model,omitempty"`
}

// BundleSpec reads the spec at path and the files it names. The files must
// lie beside the spec or below it: a worker recreates them there.
func BundleSpec(path string, s *spec.Spec) (Bundle, error) {
	return bundleOf(BatchOptions{SpecPath: path, Spec: s})
}

// bundleOf is the bundle of opts' spec: its SpecData and Script when
// given, what their files hold otherwise.
func bundleOf(opts BatchOptions) (Bundle, error) {
	path, s, data := opts.SpecPath, opts.Spec, opts.SpecData
	if data == nil {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return Bundle{}, err
		}
	}
	b := Bundle{Name: filepath.Base(path), Data: data}
	if name, ok := strings.CutPrefix(strings.TrimSpace(s.Model), "script:"); ok {
		rel, err := bundlePath(name)
		if err != nil {
			return Bundle{}, fmt.Errorf("the script file %s cannot travel with the job: %w", name, err)
		}
		var content []byte
		if opts.Script != nil {
			content = opts.Script.Data()
		} else if content, err = os.ReadFile(filepath.Join(filepath.Dir(path), rel)); err != nil {
			return Bundle{}, fmt.Errorf("the script file: %w", err)
		}
		b.Files = map[string][]byte{filepath.ToSlash(rel): content}
	}
	return b, nil
}

// bundledPaths are the paths of the files b bundles beside the spec at
// specPath.
func bundledPaths(specPath string, b Bundle) []string {
	var paths []string
	for name := range b.Files {
		paths = append(paths, filepath.Join(filepath.Dir(specPath), filepath.FromSlash(name)))
	}
	return paths
}

// bundlePath checks that name is a relative path that stays beside the spec.
func bundlePath(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("no file name")
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`):
		return "", errors.New("an absolute path; name it relative to the spec")
	}
	clean := filepath.Clean(filepath.FromSlash(name))
	if clean == "." || slices.Contains(strings.Split(filepath.ToSlash(clean), "/"), "..") {
		return "", errors.New("it must lie beside the spec or below it")
	}
	return clean, nil
}

// digest identifies the bundle's content.
func (b Bundle) digest() string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(b) // map keys are written sorted
	return hex.EncodeToString(h.Sum(nil))
}

// Result is how a job ended, as a worker reports it.
type Result struct {
	Job   string `json:"job"`
	Batch string `json:"batch"`
	Index int    `json:"index"`
	Label string `json:"label"`
	OK    bool   `json:"ok"`
	// Cached: the answer was replayed from the shared cache.
	Cached bool `json:"cached"`
	// Output is the answer's JSON value with an output_schema, its text as a
	// JSON string otherwise; null for a failed job.
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error,omitempty"`
	// Usage is the run's runtime.Usage as JSON; null when the job failed
	// before a run started.
	Usage json.RawMessage `json:"usage"`
	// Worker is the name of the worker that ran it, Attempt which of its
	// attempts that was: its deliveries, but those handed back by workers
	// told to stop.
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	// Changes are the files a shipped job's run changed.
	Changes *Changes `json:"changes,omitempty"`
	// Entry is the cache entry a shipped job's successful run made, for its
	// submitter to store once it has applied the changes.
	Entry *CacheEntry `json:"cache_entry,omitempty"`
	// Warnings are the cache's, as the run met them: an entry that could
	// not be read, a hit whose expected output files were gone.
	Warnings []string `json:"warnings,omitempty"`
}

// Changes are what a shipped job's run did to its copy of the workspace.
type Changes struct {
	// Object holds the new content of Files, as an archive: an object of
	// the delivery's own in the ship store; "" when no file changed.
	Object string `json:"object,omitempty"`
	// Files were created or modified, in content or in permission bits;
	// Deleted were shipped and are gone.
	Files   []string `json:"files,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
}

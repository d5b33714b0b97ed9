package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
)

// jobEvents writes each batch job's events to a file of its own in a
// directory, named after the job's workspace, as "agentspec run --events"
// writes a run's.
type jobEvents struct {
	dir   string
	names []string // by job index

	mu    sync.Mutex
	open  map[int]*os.File
	lines map[int]capabilities.Listener
	errs  []error
}

// makeEventsDir makes the --events directory of batch and submit if
// needed. What stops it is a usage error (exit 2), found before any job
// starts or the queue is reached, whether the jobs run here or on it.
func makeEventsDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return exitWith(exitUsage, fmt.Errorf("--events %s is not a directory: each job's events go to a file of their own in it", dir))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return exitWith(exitUsage, fmt.Errorf("--events: %w", err))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exitWith(exitUsage, fmt.Errorf("--events: %w", err))
	}
	return nil
}

// newJobEvents makes dir if needed (makeEventsDir) and names each
// workspace's file.
func newJobEvents(dir string, workspaces []string) (*jobEvents, error) {
	if err := makeEventsDir(dir); err != nil {
		return nil, err
	}
	return &jobEvents{dir: dir, names: eventFileNames(workspaces), open: map[int]*os.File{}, lines: map[int]capabilities.Listener{}}, nil
}

// eventFileNames names the events file of each workspace: its base name,
// or, when several workspaces share one, its path with the separators made
// underscores; a name still shared gets the job's number.
func eventFileNames(workspaces []string) []string {
	const ext = ".events.jsonl"
	names := make([]string, len(workspaces))
	count := func(f func(string) string) map[string]int {
		n := map[string]int{}
		for _, w := range workspaces {
			n[f(w)]++
		}
		return n
	}
	base := func(w string) string { return filepath.Base(filepath.Clean(w)) }
	path := func(w string) string {
		p := filepath.ToSlash(filepath.Clean(w))
		p = strings.TrimLeft(strings.ReplaceAll(p, "/", "_"), "._")
		if p == "" {
			p = "workspace"
		}
		return p
	}
	bases, paths := count(base), count(path)
	for i, w := range workspaces {
		switch {
		case bases[base(w)] == 1 && base(w) != "." && base(w) != "/":
			names[i] = base(w) + ext
		case paths[path(w)] == 1:
			names[i] = path(w) + ext
		default:
			names[i] = path(w) + "-" + strconv.Itoa(i+1) + ext
		}
	}
	// One workspace's base name may be another's path made a name (x/a_b
	// and a/b), or its path with a number: those that still share a name
	// get their job's number too, until none does.
	for {
		shared := map[string]int{}
		for _, n := range names {
			shared[n]++
		}
		changed := false
		for i, n := range names {
			if shared[n] > 1 {
				names[i] = strings.TrimSuffix(n, ext) + "-" + strconv.Itoa(i+1) + ext
				changed = true
			}
		}
		if !changed {
			return names
		}
	}
}

// start opens the job's file.
func (e *jobEvents) start(job runtime.Job) {
	f, err := runtime.CreateEventsFile(filepath.Join(e.dir, e.names[job.Index]))
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("--events: %w", err))
		return
	}
	e.open[job.Index] = f
	e.lines[job.Index] = runtime.JSONLines(f)
}

// listen writes ev to its job's file.
func (e *jobEvents) listen(ctx context.Context, ev capabilities.Event) error {
	job, ok := runtime.JobFrom(ctx)
	if !ok {
		return nil
	}
	e.mu.Lock()
	l := e.lines[job.Index]
	e.mu.Unlock()
	if l == nil {
		return nil // the file could not be created; reported at the end
	}
	return l(ctx, ev)
}

// end closes the job's file: its run.end is written.
func (e *jobEvents) end(job runtime.Job) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if f := e.open[job.Index]; f != nil {
		if err := f.Close(); err != nil {
			e.errs = append(e.errs, fmt.Errorf("--events: %w", err))
		}
		delete(e.open, job.Index)
		delete(e.lines, job.Index)
	}
}

// close closes what is still open and returns the first problems.
func (e *jobEvents) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, f := range e.open {
		if err := f.Close(); err != nil {
			e.errs = append(e.errs, fmt.Errorf("--events: %w", err))
		}
		delete(e.open, i)
	}
	return errors.Join(e.errs...)
}

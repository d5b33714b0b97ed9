package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// What a delivery runs with: the job's spec, loaded from its bundle, and its
// workspace, found under the workspace root or unpacked from the object
// store, with the changes sent back.

// loaded is a bundle a worker loaded: its spec, and the directory its
// files were written to, which the spec's runs read (a script model's
// turns).
type loaded struct {
	spec *spec.Spec
	dir  string
	runs int  // runs of it that may still read its files
	gone bool // forgotten (see maxSpecs): its directory goes with its last run
}

// loadSpec loads a bundle, once per worker while it keeps it: its files are
// written to a directory of their own, which the spec's relative names
// resolve against. Call release once the run is done with its files: the
// directory of a bundle no longer kept is removed when none of its runs
// needs it, so that a worker holds the files of maxSpecs bundles, and of
// those still running, however many different ones its jobs bring.
func (w *Worker) loadSpec(b Bundle) (s *spec.Spec, release func(), err error) {
	key := b.digest()
	w.mu.Lock()
	defer w.mu.Unlock()
	if l, ok := w.specs[key]; ok {
		l.runs++
		return l.spec, w.releaser(l), nil
	}
	if strings.ContainsAny(b.Name, `/\`) || b.Name == "" || b.Name == "." || b.Name == ".." {
		return nil, nil, fmt.Errorf("the job's spec has an invalid name %q", b.Name)
	}
	if len(w.specs) >= maxSpecs {
		for _, l := range w.specs {
			l.gone = true
			if l.runs == 0 {
				os.RemoveAll(l.dir)
			}
		}
		clear(w.specs)
	}
	// A directory of its own, whatever bundle was written before with the
	// same content: one forgotten may still be read by its runs, and goes
	// with the last of them.
	dir, err := os.MkdirTemp(w.dir, key[:16]+"-")
	if err != nil {
		return nil, nil, err
	}
	if err := writeBundle(dir, b); err != nil {
		// Nothing of a bundle written half stays behind.
		os.RemoveAll(dir)
		return nil, nil, err
	}
	s, err = w.parseSpec(filepath.Join(dir, b.Name), b.Pointer, b.Model)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, bundleErrors(err, dir)
	}
	l := &loaded{spec: s, dir: dir, runs: 1}
	w.specs[key] = l
	return s, w.releaser(l), nil
}

// releaser is the function a run of l calls when it is done with l's
// files; calls after the first do nothing.
func (w *Worker) releaser(l *loaded) func() {
	return sync.OnceFunc(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if l.runs--; l.gone && l.runs == 0 {
			os.RemoveAll(l.dir)
		}
	})
}

// writeBundle writes the bundle's files and its spec into dir.
func writeBundle(dir string, b Bundle) error {
	root, err := sandbox.OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for name, data := range b.Files {
		rel, err := bundlePath(name)
		if err != nil {
			return fmt.Errorf("the job's file %s: %w", name, err)
		}
		rel = filepath.ToSlash(rel)
		if d := path.Dir(rel); d != "." {
			if _, err := root.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		if err := root.WriteFile(rel, data, 0o600); err != nil {
			return err
		}
	}
	return root.WriteFile(b.Name, b.Data, 0o600)
}

// parseSpec loads a job's spec: the file at path, or the spec written inline
// at pointer in it, with model in place of its own when set, checked as a run
// would check its model. A ${VAR} reference in the spec reads the worker's
// environment, which the job chose, so it is refused unless the worker
// allows it: the reference is never filled with a value of the worker's, and
// the spec is refused at the reference. References elsewhere in a pipeline
// file (another step's inline spec) are not the job's and do not matter.
func (w *Worker) parseSpec(path, pointer, model string) (*spec.Spec, error) {
	l := &spec.Loader{Registry: w.opts.Registry, Model: model, ModelCheck: runtime.CheckModel}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if pointer == "" {
		var asked []string
		if !w.opts.Allow.Env {
			l.LookupEnv = func(name string) (string, bool) {
				asked = append(asked, name)
				return "", true
			}
		}
		s, err := l.Load(path, data)
		if len(asked) > 0 {
			return nil, envRefused(path, data, spec.Position{File: path, Line: 1, Col: 1}, asked[0])
		}
		return s, err
	}
	lookup := l.LookupEnv // nil: the worker's environment
	if !w.opts.Allow.Env {
		// Each reference is filled with a mark naming it, found afterwards
		// in the job's own spec, if it is there.
		lookup = func(name string) (string, bool) { return envMark + name + envMark, true }
	}
	doc, err := spec.ParseDocument(path, data, lookup)
	if err != nil {
		return nil, err
	}
	if !w.opts.Allow.Env {
		if at, name, ok := findEnvMark(doc.Value(pointer), pointer); ok {
			return nil, envRefused(path, data, doc.Pos(at), name)
		}
	}
	return l.LoadValue(doc, pointer)
}

// envMark brackets the name of a ${VAR} reference a worker does not fill.
const envMark = "\x00agentspec-env\x00"

// envRefused is the error of a spec that reads the worker's environment
// through ${name}, placed at the reference: the first one written at or
// after from (the value holding it).
func envRefused(path string, data []byte, from spec.Position, name string) error {
	ref := "${" + name
	pos := from
	lines := bytes.Split(data, []byte("\n"))
	for n := from.Line; n >= 1 && n <= len(lines); n++ {
		line, skip := lines[n-1], 0
		if n == from.Line {
			// Col counts runes; find the byte it starts at.
			for c := 1; c < from.Col && skip < len(line); c++ {
				_, size := utf8.DecodeRune(line[skip:])
				skip += size
			}
		}
		if i := indexRef(line[skip:], ref); i >= 0 {
			pos = spec.Position{File: path, Line: n, Col: utf8.RuneCount(line[:skip+i]) + 1}
			break
		}
	}
	return spec.Errors{{Pos: pos, Msg: fmt.Sprintf("%s} reads the worker's environment; this worker was not started with %s", ref, flagEnv)}}
}

// indexRef finds the reference ref ("${NAME") in line, ended as a reference
// ends ("}" or ":-"), not as the start of a longer name; -1 if absent.
func indexRef(line []byte, ref string) int {
	for off := 0; ; {
		i := bytes.Index(line[off:], []byte(ref))
		if i < 0 {
			return -1
		}
		i += off
		rest := line[i+len(ref):]
		if bytes.HasPrefix(rest, []byte("}")) || bytes.HasPrefix(rest, []byte(":-")) {
			return i
		}
		off = i + len(ref)
	}
}

// findEnvMark looks in v, the value at the JSON pointer ptr, for a string
// holding an envMark, and returns where it is and the name it marks.
func findEnvMark(v any, ptr string) (at, name string, ok bool) {
	switch v := v.(type) {
	case string:
		if _, rest, found := strings.Cut(v, envMark); found {
			name, _, _ = strings.Cut(rest, envMark)
			return ptr, name, true
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the same answer every time
		for _, k := range keys {
			esc := strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			if at, name, ok := findEnvMark(v[k], ptr+"/"+esc); ok {
				return at, name, true
			}
		}
	case []any:
		for i, e := range v {
			if at, name, ok := findEnvMark(e, ptr+"/"+strconv.Itoa(i)); ok {
				return at, name, true
			}
		}
	}
	return "", "", false
}

// bundleErrors names the files of a spec's problems as the submitter knows
// them (relative to the spec's directory), not by the worker's copy.
func bundleErrors(err error, dir string) error {
	var list spec.Errors
	if !errors.As(err, &list) {
		return err
	}
	out := make(spec.Errors, len(list))
	for i, e := range list {
		c := *e
		if rel, rerr := filepath.Rel(dir, c.Pos.File); rerr == nil && filepath.IsAbs(c.Pos.File) && !strings.HasPrefix(rel, "..") {
			c.Pos.File = filepath.ToSlash(rel)
		}
		out[i] = &c
	}
	return out
}

// workspace finds or unpacks the job's workspace.
func (w *Worker) workspace(ctx context.Context, job Job) (*workspace, error) {
	if job.Ship == nil {
		dir, err := ResolveWorkspace(w.root, job.Workspace)
		if err != nil {
			return &workspace{}, errPermanent{err}
		}
		return &workspace{dir: dir, name: "nats:" + filepath.ToSlash(filepath.Clean(job.Workspace))}, nil
	}
	base := filepath.Join(w.root, shipDir)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return &workspace{}, err
	}
	dir, release, err := newCopyDir(base, strings.ReplaceAll(job.ID, ".", "-")+"-")
	ws := &workspace{dir: dir, name: "ship:" + job.Ship.Origin, release: release}
	if err != nil {
		return ws, err
	}
	probe := probeFolding
	if w.foldingOf != nil {
		probe = w.foldingOf
	}
	folding, err := probe(dir)
	if err != nil {
		return ws, err
	}
	ws.folding = folding
	obs, err := w.q.shipStore(ctx)
	if err != nil {
		return ws, err
	}
	obj, err := obs.Get(ctx, job.Ship.Object)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return ws, errPermanent{fmt.Errorf("the shipped workspace %w", w.q.goneFromShip(ctx, obs, job.Ship.Object, "the job waited in the queue"))}
	}
	if err != nil {
		return ws, err
	}
	defer obj.Close()
	// The worker's limit, not the job's: the size the object claims is the
	// submitter's word too, so the bytes are counted as they come.
	limit := w.opts.ShipMax
	tooBig := fmt.Errorf("the shipped workspace is more than this worker's limit of %s (agentspec worker --ship-max)", sizeString(limit))
	if info, err := obj.Info(); err == nil && int64(info.Size) > limit {
		return ws, errPermanent{tooBig}
	}
	in := &cappedReader{r: obj, left: limit}
	if ws.shipped, err = unpackFolded(dir, in, limit*unpackFactor, folding); err != nil {
		if in.over {
			return ws, errPermanent{tooBig}
		}
		if c := (*nameCollision)(nil); errors.As(err, &c) {
			return ws, errPermanent{fmt.Errorf("the shipped workspace: %s; the job is not run, "+
				"since its changes could then overwrite or delete the submitter's files", c.on("this worker's disk"))}
		}
		if u := (*unmadeName)(nil); errors.As(err, &u) {
			return ws, errPermanent{fmt.Errorf("the shipped workspace: %s; the job is not run, since the file would be "+
				"another there: rename it, or run the job on a worker that is not on Windows", u.on("on this worker"))}
		}
		return ws, errPermanent{fmt.Errorf("the shipped workspace: %w", err)}
	}
	return ws, nil
}

// cappedReader reads at most left bytes of r, and fails after them.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more says whether r had more to give.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.over = true
			return 0, errTooBig
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// shipBack stores the files the run changed in its copy, for the submitter.
// The run is over: a worker told to stop meanwhile still sends them.
//
// Each delivery's go to an object of their own (see changesObject): a
// worker that lost the job, whose upload ends after another delivery's
// result is stored, would otherwise replace the files the submitter
// applies with its own, under the other's list of them.
func (w *Worker) shipBack(ctx context.Context, job Job, ws *workspace) (*Changes, error) {
	ctx = context.WithoutCancel(ctx)
	changed, deleted, shippedAs, err := changesFolded(ws.dir, ws.shipped, ws.folding)
	if err != nil {
		return nil, err
	}
	ch := &Changes{Files: changed, Deleted: deleted}
	if len(changed) == 0 {
		return ch, nil
	}
	want := map[string]bool{}
	for _, f := range changed {
		want[f] = true
	}
	obs, err := w.q.shipStore(ctx)
	if err != nil {
		return nil, err
	}
	ch.Object = changesObject(job.Ship.Object, randomToken())
	named := func(rel string) string {
		if was, ok := shippedAs[rel]; ok {
			rel = was
		}
		if !want[rel] {
			return ""
		}
		return rel
	}
	if _, err := shipNamed(ctx, obs, ch.Object, ws.dir, w.dir, w.opts.ShipMax, named); err != nil {
		return nil, err
	}
	return ch, nil
}

// changesObject names the object in the ship store that holds the changes
// of one delivery of the job whose workspace was shipped as object: its
// name, ".changes." and an id of the delivery's own.
func changesObject(object, delivery string) string {
	return object + ".changes." + delivery
}

// isChangesObject reports whether name is changesObject of object and some
// delivery's id, as changesObject makes them.
func isChangesObject(name, object string) bool {
	id, ok := strings.CutPrefix(name, changesObject(object, ""))
	if !ok || len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// shipDir is the directory below the workspace root where a worker unpacks
// shipped workspaces.
const shipDir = ".agentspec-ship"

// ResolveWorkspace returns the real path of rel under root (a real path),
// refusing what could lead outside it: an empty or absolute path, a ".."
// component, or a symbolic link that resolves outside the root. Nor may it
// be the root itself, lie in the worker's directory of shipped workspaces
// or in a worker's scratch directory, or hold the temporary directory. The
// workspace must be an existing directory.
func ResolveWorkspace(root, rel string) (string, error) {
	real, err := resolveUnder(root, rel)
	if err != nil {
		return "", err
	}
	// Workers keep their scratch directories, which hold the specs and
	// files of every job they run, in the temporary directory: a root that
	// holds it must not let a job's workspace be one of them, or hold them.
	if tmp, err := filepath.EvalSymlinks(os.TempDir()); err == nil {
		inTmp, _ := filepath.Rel(tmp, real)
		switch {
		case within(real, tmp):
			return "", fmt.Errorf("workspace %q: holds the temporary directory, where workers keep their scratch directories", rel)
		case within(tmp, real) && strings.HasPrefix(strings.SplitN(filepath.ToSlash(inTmp), "/", 2)[0], scratchPrefix):
			return "", fmt.Errorf("workspace %q: a worker's scratch directory", rel)
		}
	}
	return real, nil
}

// resolveUnder is ResolveWorkspace but for the temporary directory, which
// is each worker's own: what a submitter checks on the tree it shares with
// the workers (see nameUnder).
func resolveUnder(root, rel string) (string, error) {
	switch {
	case rel == "":
		return "", errors.New("the job names no workspace")
	case filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`):
		return "", fmt.Errorf("workspace %q: absolute paths are not allowed", rel)
	case slices.Contains(strings.FieldsFunc(rel, func(r rune) bool { return r == '/' || r == '\\' }), ".."):
		return "", fmt.Errorf("workspace %q: '..' is not allowed", rel)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("workspace %q: not found under the workspace root", rel)
	}
	if !within(root, real) {
		return "", fmt.Errorf("workspace %q: escapes the workspace root", rel)
	}
	// The root holds every other job's workspace, and shipDir the copies of
	// shipped ones: a job run over either would reach them all.
	switch inside, _ := filepath.Rel(root, real); {
	case inside == ".":
		return "", fmt.Errorf("workspace %q: the workspace root itself; a job's workspace must be a directory below it", rel)
	case strings.EqualFold(strings.SplitN(filepath.ToSlash(inside), "/", 2)[0], shipDir):
		return "", fmt.Errorf("workspace %q: the worker's own directory of shipped workspaces", rel)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return "", fmt.Errorf("workspace %q: not a directory", rel)
	}
	return real, nil
}

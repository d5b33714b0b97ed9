package queue

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// DefaultShipMax caps a shipped workspace's archive, and the archive of the
// files its run changed.
const DefaultShipMax = 64 << 20

// unpackFactor bounds what an archive may unpack to, as a multiple of its
// cap: compression is honest up to a point.
const unpackFactor = 16

// What travels with --ship: every regular file under the workspace, hidden
// ones included, with its permission bits (0777 alone), and the
// directories that hold them. Symbolic links and special files stay behind
// (a link could name anything on the worker's disk). The archive is a
// gzipped tar, and the same holds for the files that come back.

// manifest maps each shipped file (slash-separated, relative) to what it
// was: the SHA-256 of its content, and its permission bits.
type manifest map[string]fileState

// fileState is a file's content, by its hash, and its permission bits: a
// run that changes either changed the file.
type fileState struct {
	sum  string
	perm fs.FileMode
}

// errTooBig is an archive over its cap.
var errTooBig = errors.New("too big")

// cappedWriter passes on to w at most max bytes, and refuses any more.
type cappedWriter struct {
	w      io.Writer
	n, max int64
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		return 0, errTooBig
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// packTo writes to w the archive of the files of dir that keep selects
// (nil: all), no more than max bytes of it, and returns the manifest of
// what it holds.
func packTo(w io.Writer, dir string, max int64, keep func(rel string) bool) (manifest, error) {
	return packNamed(w, dir, max, keepNamed(keep))
}

// keepNamed is keep as packNamed's name: a file keep selects (all, for
// nil) goes under its own name.
func keepNamed(keep func(rel string) bool) func(rel string) string {
	return func(rel string) string {
		if keep != nil && !keep(rel) {
			return ""
		}
		return rel
	}
}

// packNamed is packTo, each file of dir archived under the name that name
// gives it ("": left out).
func packNamed(w io.Writer, dir string, max int64, name func(rel string) string) (manifest, error) {
	buf := &cappedWriter{w: w, max: max}
	zw, _ := gzip.NewWriterLevel(buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	m := manifest{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil // links and special files stay behind
		}
		if d.IsDir() {
			return nil
		}
		if rel = name(rel); rel == "" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		// The file is read whole before its header is written, so that
		// one that grows or shrinks meanwhile (a build writing it) travels
		// as it was read, not as a size its content no longer has, which
		// the archive refuses ("write too long", "missed writing"). What
		// is read counts against the cap as the archive does. The buffer
		// is made for the size the file had, so that it is not copied as
		// it grows.
		data := bytes.NewBuffer(make([]byte, 0, min(info.Size(), max)+bytes.MinRead))
		if _, err := data.ReadFrom(io.LimitReader(f, max+1)); err != nil {
			return err
		}
		if int64(data.Len()) > max {
			return errTooBig
		}
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg, Name: rel, Size: int64(data.Len()), Mode: int64(info.Mode().Perm()), ModTime: info.ModTime(),
		}); err != nil {
			return err
		}
		if _, err := tw.Write(data.Bytes()); err != nil {
			return err
		}
		sum := sha256.Sum256(data.Bytes())
		m[rel] = fileState{sum: hex.EncodeToString(sum[:]), perm: info.Mode().Perm()}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if errors.Is(err, errTooBig) {
		return nil, fmt.Errorf("%s: the archive would be more than %s", dir, sizeString(max))
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// shipTo stores the files of dir that keep selects in obs as the object
// name, archived as packTo archives them, and returns the manifest of what
// it holds. The archive is made whole first, in a temporary file of at
// most max bytes, so that one that would pass max is refused before
// anything of it is uploaded (how big it is compressed is known only once
// it is made); then it goes to the store from the file, a chunk at a time.
// Memory holds a chunk, and one file of dir at a time (see packTo), however
// big the archive. The file is made in spoolDir ("" for the temporary
// directory). Where an open file may be removed (Unix) its name is removed
// at once, so that nothing of it stays when the process is killed (a
// submitter's second Ctrl-C ends it so); elsewhere the file is removed once
// uploaded, a worker's being in its scratch directory, which a worker
// starting sweeps when its worker was killed.
func shipTo(ctx context.Context, obs jetstream.ObjectStore, name, dir, spoolDir string, max int64, keep func(rel string) bool) (manifest, error) {
	return shipNamed(ctx, obs, name, dir, spoolDir, max, keepNamed(keep))
}

// shipNamed is shipTo, each file of dir archived under the name that named
// gives it ("": left out).
func shipNamed(ctx context.Context, obs jetstream.ObjectStore, name, dir, spoolDir string, max int64, named func(rel string) string) (manifest, error) {
	spool, err := os.CreateTemp(spoolDir, spoolPrefix+"*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("a temporary file for the archive: %w", err)
	}
	if os.Remove(spool.Name()) != nil {
		defer os.Remove(spool.Name()) // once closed
	}
	defer spool.Close()
	// dir may hold the temporary directory (a $TMPDIR in the project): the
	// file is not one of the files the archive holds.
	own, err := spool.Stat()
	if err != nil {
		return nil, err
	}
	files := func(rel string) string {
		if path.Base(rel) == own.Name() {
			if info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil && os.SameFile(info, own) {
				return ""
			}
		}
		return named(rel)
	}
	// Written a whole chunk at a time, not gzip's small writes; a packing
	// stops when ctx ends.
	bw := bufio.NewWriterSize(ctxWriter{ctx: ctx, w: spool}, shipChunk)
	m, err := packNamed(bw, dir, max, files)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, err
	}
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: shipChunk}}, spool); err != nil {
		return nil, err
	}
	return m, nil
}

// spoolPrefix begins the name of the temporary file an archive is made in.
const spoolPrefix = "agentspec-ship-"

// ctxWriter writes to w until ctx ends, then fails with its cause.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.w.Write(p)
}

// shipChunk is the size of an archive's chunks in the object store: its
// default.
const shipChunk = 128 << 10

// unpackInto extracts an archive made by packDir into dir, through the
// sandbox so that no entry can land outside it, and returns its manifest.
func unpackInto(dir string, archive io.Reader, max int64) (manifest, error) {
	return unpackFolded(dir, archive, max, nameFolding{})
}

// unpackFolded is unpackInto into a directory whose disk matches names as
// fold: it fails at the first entry that is one name there with another
// (see foldedNames), before that entry is written.
func unpackFolded(dir string, archive io.Reader, max int64, fold nameFolding) (manifest, error) {
	root, err := sandbox.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	zr, err := gzip.NewReader(archive)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	tr := tar.NewReader(zr)
	m := manifest{}
	names := foldedNames{f: fold}
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		name, err := archivePath(hdr.Name)
		if err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("archive: %s is not a regular file", name)
		}
		if len(name) > maxEntryName || strings.Count(name, "/") >= maxEntryDepth {
			return nil, fmt.Errorf("archive: entry %.80q... is deeper or longer than a workspace's files may be (%d levels, %d bytes)",
				name, maxEntryDepth, maxEntryName)
		}
		// An entry costs what its header and name cost too, so that empty
		// files with long names cannot make directories without bound.
		if total += hdr.Size + entryCost + int64(len(name)); total > max {
			return nil, fmt.Errorf("archive: more than %s of files", sizeString(max))
		}
		if err := names.add(name); err != nil {
			return nil, err
		}
		if d := path.Dir(name); d != "." {
			if _, err := root.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		// The permission bits are set whatever the umask, so that a run's
		// chmod comes back as it was made (setuid, setgid and sticky never
		// travel); the owner may always read and write. The manifest has
		// the bits as they are, which a file system may not keep whole.
		perm := fs.FileMode(hdr.Mode).Perm() | 0o600
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(tr, hdr.Size))
		var st fs.FileInfo
		if err == nil {
			err = f.Chmod(perm)
		}
		if err == nil {
			st, err = f.Stat()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		m[name] = fileState{sum: hex.EncodeToString(h.Sum(nil)), perm: st.Mode().Perm()}
	}
}

// What one archive entry may be, and what each costs against the limit
// besides its content: a tar header's size.
const (
	maxEntryName  = 4096 // PATH_MAX: no longer path can be opened in one call
	maxEntryDepth = 128
	entryCost     = 512
)

// archivePath checks an entry's name: relative, clean, without "..".
func archivePath(name string) (string, error) {
	clean := path.Clean(name)
	if name == "" || path.IsAbs(name) || strings.HasPrefix(name, `\`) || clean == "." ||
		slices.Contains(strings.Split(clean, "/"), "..") || strings.Contains(name, `\`) {
		return "", fmt.Errorf("archive: entry %q does not name a file inside the workspace", name)
	}
	return clean, nil
}

// changesSince compares dir with what was shipped into it: the files
// created or modified (in content or permission bits), and those deleted,
// both sorted.
func changesSince(dir string, shipped manifest) (changed, deleted []string, err error) {
	changed, deleted, _, err = changesFolded(dir, shipped, nameFolding{})
	return changed, deleted, err
}

// changesFolded is changesSince in a copy on a disk that matches names as
// fold: a file that dir lists under another form of the name it was
// shipped under, one name with it there (HFS+ lists every name decomposed,
// whatever form it was written in), is that file, under its shipped name.
// shippedAs gives, by the name dir lists, the shipped name of each such
// file.
func changesFolded(dir string, shipped manifest, fold nameFolding) (changed, deleted []string, shippedAs map[string]string, err error) {
	now, err := hashDir(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	// Forms alone: a run on a disk that folds case may rename A.txt to
	// a.txt, where a name's form is the disk's, not the run's.
	if fold.forms {
		fold = nameFolding{forms: true}
		missing := map[string][]string{} // shipped names dir does not list, by key
		for rel := range shipped {
			if _, ok := now[rel]; !ok {
				k := fold.key(rel)
				missing[k] = append(missing[k], rel)
			}
		}
		var listed []string // names dir lists that were not shipped
		for rel := range now {
			if _, ok := shipped[rel]; !ok && len(missing[fold.key(rel)]) > 0 {
				listed = append(listed, rel)
			}
		}
		for _, rel := range listed {
			on, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				continue
			}
			for _, was := range missing[fold.key(rel)] {
				if _, taken := now[was]; taken {
					continue
				}
				if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(was))); err == nil && os.SameFile(on, st) {
					if shippedAs == nil {
						shippedAs = map[string]string{}
					}
					now[was], shippedAs[rel] = now[rel], was
					delete(now, rel)
					break
				}
			}
		}
	}
	for rel, st := range now {
		if was, ok := shipped[rel]; !ok || was != st {
			changed = append(changed, rel)
		}
	}
	for rel := range shipped {
		if _, ok := now[rel]; !ok {
			deleted = append(deleted, rel)
		}
	}
	slices.Sort(changed)
	slices.Sort(deleted)
	return changed, deleted, shippedAs, nil
}

// hashDir is the manifest of dir as it is.
func hashDir(dir string) (manifest, error) {
	m := manifest{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		st, err := hashFile(p)
		if err != nil {
			return err
		}
		m[filepath.ToSlash(rel)] = st
		return nil
	})
	return m, err
}

// hashFile is what the file p is.
func hashFile(p string) (fileState, error) {
	f, err := os.Open(p)
	if err != nil {
		return fileState{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fileState{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fileState{}, err
	}
	return fileState{sum: hex.EncodeToString(h.Sum(nil)), perm: info.Mode().Perm()}, nil
}

// ConflictError is a shipped job's changes that were not applied, because
// the submitter's copy of a file they touch changed after it was shipped.
// Nothing was applied; the changes were saved to Saved.
type ConflictError struct {
	Files []string
	Saved string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the run's changes were not applied: %s changed here since the workspace was shipped; they are saved in %s",
		strings.Join(e.Files, ", "), e.Saved)
}

// RefusedError is a shipped job's changes that were not applied, because
// some of them touch what no run may change here: a .git directory (or a
// name a file system takes for one), a file the spec's secret or protected
// patterns cover, the spec's own files, a path that leads out of the
// directory or through a symbolic link in it. Nothing was applied or saved.
type RefusedError struct {
	Reasons []string // one per refused file
}

func (e *RefusedError) Error() string {
	const shown = 5
	msg := strings.Join(e.Reasons[:min(len(e.Reasons), shown)], "; ")
	if more := len(e.Reasons) - shown; more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return "the run's changes were refused, and none was applied: " + msg
}

// applyChanges brings a shipped job's changes into dir, the submitter's
// workspace, all or nothing as far as a file system allows. Every path they
// name is checked first, by refuse (the spec's rules; "" lets a path pass)
// and for a symbolic link on its way here: one refused path refuses them all
// (RefusedError) before anything is written. Every file the changes touch
// must still be as it was shipped, in content and permission bits (else ConflictError, and the archive is
// saved beside dir), and so must every directory they need (a file here where
// one must go is a conflict too). Every new file is unpacked into a staging
// directory first; then the deleted files are removed and the new ones
// renamed into place, each whole. Should that stop half-way, the error says
// how far it got, and the archive is saved beside dir.
func applyChanges(dir string, shipped manifest, ch *Changes, archive []byte, max int64, refuse func(rel string) string) error {
	return applyFolded(dir, shipped, ch, archive, max, refuse, probeFolding)
}

// applyFolded is applyChanges on a disk that matches names as probe finds
// it does in a directory of dir's. Two new files that are one name there
// (A.txt and a.txt, from a worker whose disk tells them apart) would be
// one file as they are unpacked, and the changes would stop half-way, the
// first's content lost: nothing is applied, and the archive is saved
// beside dir; so it is where a file's name is one the disk cannot make
// (see unmade). A file renamed to a name that is one with its own there
// (a.txt to A.txt) is found here under both: the rename is applied (see
// renamedHere).
func applyFolded(dir string, shipped manifest, ch *Changes, archive []byte, max int64, refuse func(rel string) string,
	probe func(dir string) (nameFolding, error)) error {
	var refused []string
	for _, rel := range slices.Concat(ch.Files, ch.Deleted) {
		clean, err := archivePath(rel)
		switch {
		case err != nil:
			refused = append(refused, fmt.Sprintf("%.80q: not a path inside the directory", rel))
		case clean != rel:
			refused = append(refused, fmt.Sprintf("%.80q: not a clean path", rel))
		default:
			if why := refuse(rel); why != "" {
				refused = append(refused, why)
			} else if link := linkOnPath(dir, rel); link != "" {
				refused = append(refused, fmt.Sprintf("%s: %s is a symbolic link here", rel, link))
			}
		}
	}
	if len(refused) > 0 {
		return &RefusedError{Reasons: refused}
	}
	save := func() (string, error) {
		saved := filepath.Clean(dir) + ".agentspec-changes-" + randomToken() + ".tar.gz"
		return saved, os.WriteFile(saved, archive, 0o600)
	}
	stage, err := os.MkdirTemp(dir, ".agentspec-changes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	// The names are checked before the files here: on a disk that folds
	// them, a file found under a new name may be another's (see
	// renamedHere), which is no change made here.
	var names foldedNames
	if names.f, err = probe(stage); err != nil {
		return err
	}
	for _, rel := range slices.Concat(ch.Files, ch.Deleted) {
		var u *unmadeName
		if err := names.f.unmade(rel); errors.As(err, &u) {
			saved, err := save()
			if err != nil {
				return fmt.Errorf("the run's changes were not applied: %s; they could not be saved: %w", u.on("here"), err)
			}
			return fmt.Errorf("the run's changes were not applied: %s; they are saved in %s", u.on("here"), saved)
		}
	}
	for _, rel := range ch.Files {
		var c *nameCollision
		if err := names.add(rel); errors.As(err, &c) {
			saved, err := save()
			if err != nil {
				return fmt.Errorf("the run's changes were not applied: %s; they could not be saved: %w", c.on("this disk"), err)
			}
			// Unpacked here, the archive would make one file of the two
			// again: the error says how to have both.
			return fmt.Errorf("the run's changes were not applied: %s; they are saved in %s, which unpacked here would make one file of them too: "+
				"take %s out under a name of its own (tar -xzOf %s %s > NAME)", c.on("this disk"), saved, c.second, saved, c.second)
		}
	}
	// What each file the changes touch must be here: as it was shipped,
	// or, for a file a rename made, as the file it was renamed from.
	was, err := renamedHere(names.f, shipped, ch)
	if err != nil {
		saved, serr := save()
		if serr != nil {
			return fmt.Errorf("the run's changes were not applied: %w; they could not be saved: %v", err, serr)
		}
		return fmt.Errorf("the run's changes were not applied: %w; they are saved in %s", err, saved)
	}
	var conflicts []string
	for _, rel := range slices.Concat(ch.Files, ch.Deleted) {
		st, err := hashFile(filepath.Join(dir, filepath.FromSlash(rel)))
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
			st = fileState{} // no file there: a directory, or a file where its directory would be (see obstacles)
		case err != nil:
			return err
		}
		want := shipped[rel]
		if from, ok := was[rel]; ok {
			want = shipped[from]
		}
		if st != want {
			conflicts = append(conflicts, rel)
		}
	}
	if len(conflicts) > 0 {
		saved, err := save()
		if err != nil {
			return fmt.Errorf("the run's changes conflict with %s, and could not be saved: %w", strings.Join(conflicts, ", "), err)
		}
		return &ConflictError{Files: conflicts, Saved: saved}
	}
	if len(ch.Files) > 0 {
		got, err := unpackInto(stage, bytes.NewReader(archive), max)
		if err != nil {
			return err
		}
		for _, rel := range ch.Files {
			if _, ok := got[rel]; !ok {
				return fmt.Errorf("the changes archive lacks %s", rel)
			}
		}
	}
	root, err := sandbox.OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if blocked := obstacles(root, ch); len(blocked) > 0 {
		saved, err := save()
		if err != nil {
			return fmt.Errorf("the run's changes conflict with %s, and could not be saved: %w", strings.Join(blocked, ", "), err)
		}
		return &ConflictError{Files: blocked, Saved: saved}
	}
	// The deleted files go first, so a file the run replaced with a
	// directory (or a directory with a file) makes way for it.
	stageRel := filepath.Base(stage)
	done, total := 0, len(ch.Deleted)+len(ch.Files)
	err = func() error {
		for _, rel := range ch.Deleted {
			if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			done++
		}
		for _, rel := range ch.Files {
			if st, err := root.Lstat(rel); err == nil && st.IsDir() {
				if err := root.Remove(rel); err != nil { // emptied by the deletions, or not there to take
					return err
				}
			}
			if d := path.Dir(rel); d != "." {
				if _, err := root.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if err := root.Rename(stageRel+"/"+rel, rel); err != nil {
				return err
			}
			done++
		}
		return nil
	}()
	if err != nil {
		// Half-way: say so, and keep every change where it can be had.
		saved, serr := save()
		if serr != nil {
			return fmt.Errorf("the run's changes stopped after %d of %d (%w), and could not be saved: %v", done, total, err, serr)
		}
		return fmt.Errorf("the run's changes stopped after %d of %d (%w); all of them are saved in %s", done, total, err, saved)
	}
	return nil
}

// renamedHere gives, by the new name, the file each of ch's renames
// renamed where the two names are one on a disk that matches names as f
// (a.txt to A.txt, from a worker whose disk tells case apart): such a disk
// finds the old file under the new name too, which is not a change made
// here since the workspace was shipped. It is a rename there only when it
// is the only change to that name, one file deleted and one made, in one
// directory: the deletion goes first, and the rename makes the new name.
// A rename whose directories differ so fails: a directory keeps the name
// it has, and the file would stay in it.
func renamedHere(f nameFolding, shipped manifest, ch *Changes) (map[string]string, error) {
	if !f.cases && !f.forms {
		return nil, nil
	}
	gone := map[string][]string{} // deleted files, by key
	for _, rel := range ch.Deleted {
		k := f.key(rel)
		gone[k] = append(gone[k], rel)
	}
	var was map[string]string
	for _, rel := range ch.Files {
		if _, ok := shipped[rel]; ok {
			continue
		}
		from := gone[f.key(rel)]
		if len(from) != 1 || !f.same(from[0], rel) {
			continue
		}
		if path.Dir(from[0]) != path.Dir(rel) {
			return nil, fmt.Errorf("the run renamed %s to %s, which this disk takes for one name (it does not tell %s apart), "+
				"and a directory here keeps the name it has: the file would stay in %s", from[0], rel, f.apart(from[0], rel), path.Dir(from[0]))
		}
		if was == nil {
			was = map[string]string{}
		}
		was[rel] = from[0]
	}
	return was, nil
}

// obstacles are the paths here that would stop ch half-way: a file (not
// among those deleted) where a changed file needs a directory, or a
// directory where a changed file goes that the deletions do not empty.
func obstacles(root *sandbox.Dir, ch *Changes) []string {
	deleted := make(map[string]bool, len(ch.Deleted))
	under := map[string]bool{} // directories that lose a file
	for _, rel := range ch.Deleted {
		deleted[rel] = true
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			under[d] = true
		}
	}
	var blocked []string
	for _, rel := range ch.Files {
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if st, err := root.Lstat(d); err == nil && !st.IsDir() && !deleted[d] {
				blocked = append(blocked, d)
				break
			}
		}
		if st, err := root.Lstat(rel); err == nil && st.IsDir() && !under[rel] {
			blocked = append(blocked, rel)
		}
	}
	slices.Sort(blocked)
	return slices.Compact(blocked)
}

// linkOnPath returns the first of rel's leading paths ("a", "a/b", ...,
// rel) that is a symbolic link (or, on Windows, any reparse point) in dir,
// or "".
func linkOnPath(dir, rel string) string {
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel[:i])))
		if err != nil {
			return "" // nothing further down exists either
		}
		if st.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
			return rel[:i]
		}
	}
	return ""
}

func randomToken() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

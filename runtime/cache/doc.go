// Package cache stores the results of agent runs on disk and replays them
// when the same spec runs again over the same inputs, while staying honest
// about the files in the run's workspace.
//
// # The key
//
// A key is the SHA-256 of everything a run's answer depends on:
//
//   - the protocol version (ProtocolVersion), so the format can be bumped;
//   - the spec's meaning: its canonical JSON (CanonicalJSON), so formatting
//     and comments never change the key while any change of value does;
//   - the model reference, the user input and the instruction variables;
//   - the workspace's real path (symlinks resolved), so two workspaces never
//     share an entry;
//   - through workspace.input_globs, the files the agent reads: see HashFiles.
//     A cache directory inside the workspace is not among them: its marker
//     and entries are left out of the key of that cache's lookups and
//     stores, or each entry stored would change the next run's key.
//
// # The flow
//
// A caller computes the key before the run and again after it:
//
//	c, err := cache.New(s.Cache.Dir, cache.WithWarn(warn)) // "" is DefaultDir
//	k := cache.KeyInput{
//		Spec:  doc, // the spec as JSON, without its file positions
//		Model: model, Input: input, Vars: vars, Workspace: dir,
//		InputGlobs:          s.Workspace.InputGlobs,
//		ExpectedOutputFiles: s.Workspace.ExpectedOutputFiles,
//	}
//	entry, key, ok, err := c.Lookup(ctx, k)
//	if ok {
//		return entry // replay: the workspace still holds the expected files
//	}
//	res, runErr := runtime.Run(ctx, s, opts...) // key can label or salt the run
//	if runErr == nil {
//		_, err = c.Store(ctx, k, cache.Entry{Output: res.Output, JSON: res.JSON,
//			Usage: cache.Usage{Requests: res.Usage.Requests, InputTokens: res.Usage.InputTokens,
//				OutputTokens: res.Usage.OutputTokens, ToolCalls: res.Usage.ToolCalls},
//			SpecName: s.Name})
//	}
//
// The spec goes into the key as what the run reads, never with the file
// positions spec.Spec carries, which move with every comment: runtime keys
// the typed spec's fields without them, so that a spec a program changes
// after loading it is keyed as it runs, not as it was loaded.
//
// Store hashes the input files again, as they are after the run, and files
// the entry under that key. A run that edits its own inputs is therefore
// found by a later run over the edited files and never replayed over the
// unedited ones, where running again is the only right answer.
//
// A hit whose expected output files are missing (a fresh checkout, say) is a
// miss: Lookup reports it through WithWarn and the caller runs again.
// Only successful runs are stored: Store refuses an entry that carries the
// run's error or has no output.
//
// Errors from Lookup and Store concern the cache, never the run: a caller may
// run without the cache when Lookup fails, and report a failed Store and go on,
// since the run's result is already in hand.
//
// # On disk
//
// A cache directory holds a CACHEDIR.TAG marker (https://bford.info/cachedir/,
// so backup tools skip it) and sixteen append-only logs, entries/0.log to
// entries/f.log, by the first hex digit of the key: one line per entry
// stored, with its key and a checksum, the last whole one of a key being its
// entry. Each record is appended in one write, so concurrent writers,
// processes included, are safe, and a reader skips a record that is not
// whole. Records are not synced: a crash may leave one torn. A record that
// cannot be read back (a checksum that fails, zeros a crash left) is a miss,
// reported through WithWarn, and the log is rewritten without it, under a
// lock (flock) that appending takes too, so that a record another process
// appends meanwhile is kept (where the file system or the system has no such
// lock, as on Windows, it may be lost, and is stored again by the run that
// misses it). A whole record of another format version
// (another agentspec sharing the cache wrote it, under a key this one never
// looks up) is kept. A log is rewritten the same way once most of its
// records are replaced ones, a key stored again whenever its entry was not
// replayed. A record a crash cut short at a log's very end looks
// like one being written: it is a miss, and is reported and removed once the
// next record written after it ends it. A cache keeps, for each log, where
// each key's record lies, and reads only what was appended since it last
// looked. Entry files of earlier versions,
// entries/<first two hex digits>/<key>.json, are still read, counted and
// cleared, and never written. Clear removes only the cache's own files, and
// only from a directory holding the cache's marker.
//
// # Elsewhere
//
// WithBackend keeps the entries in a Backend instead of a directory, and
// NewKV in a NATS JetStream key-value bucket that many machines share. Keys
// and entries are the same, and so are the checks on the way out. Where the
// same workspace is found at different paths (each queue worker mounts or
// unpacks a job's directory its own way), KeyInput.WorkspaceName names it in
// the key instead of its real path.
package cache

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/runtime/cache"
)

func newCacheCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect or clear the result cache",
		Long: `The result cache holds the answers of successful runs of specs with "cache: true" or
"cache: {dir: PATH}", one line each in sixteen logs under entries/, so that a run over
unchanged inputs is replayed instead of run again.

The directory is --dir, else $` + cache.EnvDir + `, else agentspec under the user's cache directory
(~/.cache/agentspec on Linux, ~/Library/Caches/agentspec on macOS, %LocalAppData%\agentspec on
Windows). A spec's "cache: {dir: PATH}" names its own directory; pass it with --dir. Jobs run
by "agentspec worker" use none of these: the workers share a JetStream key-value bucket
(worker --cache-bucket), whose entries "agentspec queue stats" counts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "cache directory (default: $"+cache.EnvDir+", else agentspec under the user's cache directory)")
	cmd.AddCommand(newCacheStatsCmd(&dir), newCacheClearCmd(&dir))
	return cmd
}

func newCacheStatsCmd(dir *string) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "stats [--dir DIR] [-o json]",
		Short: "Show what the cache holds",
		Long: `Stats reads every entry of the cache and prints the directory, the number of entries, the
size of the files holding them (records a later one of the same key replaced included), the
oldest and newest entry (UTC), and the number of entries per spec name. Entries that cannot be
read back (damaged, or written by another format version) are counted as corrupt; a run meeting
a damaged one rewrites its log without it, while one of another version is left for the
agentspec that wrote it, and "agentspec cache clear" removes them all.

A directory that does not exist or is empty is an empty cache.
Exit status: 0 success, 1 the cache could not be read, 2 a usage error or a directory that is
not an agentspec cache (no CACHEDIR.TAG written by agentspec).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(format); err != nil {
				return exitWith(exitUsage, err)
			}
			c, err := openCache(*dir)
			if err != nil {
				return err
			}
			st, err := c.Stats(cmd.Context())
			if err != nil {
				return cacheError(err)
			}
			if format == formatJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				err = enc.Encode(st)
			} else {
				err = printStats(cmd.OutOrStdout(), st)
			}
			if err != nil {
				return exitWith(exitFailure, err)
			}
			return nil
		},
	}
	addOutputFlag(cmd.Flags(), &format, formatText, `json: print one JSON object {"dir", "entries", "corrupt", "bytes", "oldest", "newest", "specs"}; an empty cache has no oldest, newest or specs`)
	return cmd
}

func newCacheClearCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "clear [--dir DIR]",
		Short: "Remove every entry from the cache",
		Long: `Clear removes every entry of the cache, corrupt ones included, and any temporary file an
interrupted write left behind, and prints how many entries it removed.

It removes only the files the cache wrote: the logs entries/0.log to entries/f.log, the entry
files earlier versions wrote (entries/<2 hex digits>/<key>.json), the temporary files beside
them, then the directories they leave empty. The directory, its CACHEDIR.TAG and
any other file stay. A directory that holds files but no CACHEDIR.TAG written by agentspec is
refused, so a mistaken --dir loses nothing.

Exit status: 0 success (an empty or missing directory included), 1 an entry could not be
removed, 2 a usage error or a directory that is not an agentspec cache.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := openCache(*dir)
			if err != nil {
				return err
			}
			n, err := c.Clear(cmd.Context())
			if err != nil {
				return cacheError(err)
			}
			noun := "entries"
			if n == 1 {
				noun = "entry"
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "removed %d %s from %s\n", n, noun, c.Dir()); err != nil {
				return exitWith(exitFailure, err)
			}
			return nil
		},
	}
}

// openCache opens the cache at dir (--dir), or where the environment says
// when dir is empty. A directory that is a file is a usage error, as one
// that is not a cache is: the name given is wrong.
func openCache(dir string) (*cache.Cache, error) {
	c, err := cache.New(dir)
	if err != nil {
		return nil, exitWith(exitFailure, err)
	}
	if st, err := os.Stat(c.Dir()); err == nil && !st.IsDir() {
		named := "--dir"
		switch {
		case dir != "":
		case os.Getenv(cache.EnvDir) != "":
			named = "$" + cache.EnvDir
		default:
			named = "the cache directory"
		}
		return nil, exitWith(exitUsage, fmt.Errorf("%s %s is not a directory", named, c.Dir()))
	}
	return c, nil
}

// cacheError gives a directory that is not a cache the usage exit code: the
// --dir argument, or the environment, is wrong.
func cacheError(err error) error {
	if errors.Is(err, cache.ErrNotCache) {
		return exitWith(exitUsage, err)
	}
	return exitWith(exitFailure, err)
}

func printStats(w io.Writer, st cache.Stats) error {
	var b strings.Builder
	row := func(label, value string) { fmt.Fprintf(&b, "%-10s %s\n", label, value) }
	row("directory", st.Dir)
	row("entries", fmt.Sprint(st.Entries))
	if st.Corrupt > 0 {
		row("corrupt", fmt.Sprint(st.Corrupt))
	}
	row("size", formatBytes(st.Bytes))
	if st.Entries > 0 {
		row("oldest", st.Oldest.UTC().Format(time.RFC3339))
		row("newest", st.Newest.UTC().Format(time.RFC3339))
		// Most entries first, then by name.
		names := slices.SortedFunc(maps.Keys(st.Specs), func(a, b string) int {
			if d := st.Specs[b] - st.Specs[a]; d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		parts := make([]string, len(names))
		for i, n := range names {
			if n == "" {
				n = "(unnamed)"
			}
			parts[i] = fmt.Sprintf("%s %d", n, st.Specs[names[i]])
		}
		row("specs", strings.Join(parts, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatBytes writes a size in binary units, with the exact count when it is
// rounded.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v, suffix = v/unit, s
		if v < unit {
			break
		}
	}
	return fmt.Sprintf("%.1f %s (%d bytes)", v, suffix, n)
}

// Package githooks finds where git runs a repository's hooks from, so that
// the tools that let a model change files (FileSystem, Shell) can keep it
// from planting a hook that the user's next git command runs. A hooks
// directory inside a .git is covered by their .git rules already; this is
// for the one core.hooksPath names elsewhere: husky's .husky/_, a
// .githooks, any directory a setup script chose.
package githooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Dir asks git, in dir, where it runs hooks from, and returns that
// directory, absolute (relative answers are taken from dir); "" when there
// is no git to ask or git cannot say (no repository there, or one it
// refuses). git itself answers, so every configuration file it reads
// counts, includes followed, as it will for the user's next commit.
// safe.directory is lifted for the question alone, which only reads
// configuration: a repository of another owner still runs its hooks for
// that owner.
func Dir(dir string) string {
	git, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "-c", "safe.directory=*", "-C", dir, "rev-parse", "--git-path", "hooks")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		// These would make git answer for another repository than dir's.
		return slices.Contains([]string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES"}, name)
	})
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	hooks := strings.TrimRight(string(out), "\r\n")
	if hooks == "" {
		return ""
	}
	if !filepath.IsAbs(hooks) {
		hooks = filepath.Join(dir, hooks)
	}
	return hooks
}

// InRepository reports whether dir or a directory above it holds a .git,
// so that git may find a repository whose configuration applies there.
func InRepository(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

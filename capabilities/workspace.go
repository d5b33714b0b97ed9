package capabilities

import (
	"maps"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/internal/argmax"
)

// Workspace is the workspace a capability sets for the run it is part of
// (LocalWorkspace): the directory everything of the run works in, in place
// of the one the run was given.
type Workspace struct {
	// Dir is the directory, absolute.
	Dir string
	// ReadOnly narrows every capability to what only reads: FileSystem to
	// its read tools, Shell to no tools at all.
	ReadOnly bool
	// Env are variables every command started in the workspace gets.
	Env map[string]string
}

// WorkspaceSetter is implemented by a capability of a type that sets the
// run's workspace (Type.SetsWorkspace).
type WorkspaceSetter interface {
	Workspace() Workspace
}

// CheckEnv checks the env option of a capability that starts processes
// (Shell, LocalWorkspace, a local MCP server): it refuses, naming the first
// wrong name in order, what exec cannot pass as a variable, a name that is
// empty or holds "=" or NUL (the process would get another variable, a
// nameless entry or none), a value holding NUL, and a variable longer than
// exec takes one (MaxVariable), with which no process would start.
func CheckEnv(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return ArgErrorf("env", "%q is not a variable a command can be given", k)
		}
		if strings.ContainsRune(env[k], 0) {
			return ArgErrorf("env", "the value of env %q contains a NUL byte, which cannot be passed to a process", k)
		}
		if n := len(k) + 1 + len(env[k]); n > MaxVariable {
			return ArgErrorf("env", "env %q is too long to be passed to a process: %d bytes as %s=value, at most %d", k, n, k, MaxVariable)
		}
	}
	return nil
}

// CheckEnvSize checks, beside CheckEnv, that a process can be given the
// environment a capability's env option makes: exec takes no more than
// argmax.Limit() bytes of a process's program path, arguments and
// environment (each string with its NUL, and a pointer to each), and
// refuses more (E2BIG on Linux), so that no command or server would start.
// size is what the largest process the capability starts with env takes
// (argmax.Size).
func CheckEnvSize(size int) error {
	limit := argmax.Limit()
	if limit == 0 || size <= limit {
		return nil
	}
	return ArgErrorf("env", "env is too large to be passed to a process: with the rest of its environment and its command line it takes %d bytes "+
		"(each string with its NUL and a pointer to each), and exec takes at most %d here (%s)", size, limit, argmax.Rule)
}

// EnvStrings are env's variables as exec is given them, NAME=value, in
// the order of their names.
func EnvStrings(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// MaxVariable is the longest NAME=value exec passes to a process: one
// string of its environment may be 32 pages of 4 KiB with its NUL
// (Linux's MAX_ARG_STRLEN; larger pages allow more). macOS and the BSDs
// bound the whole environment rather than one string, and Windows one
// variable at 32,767 characters: a longer one fails there as it starts.
const MaxVariable = 32*4096 - 1

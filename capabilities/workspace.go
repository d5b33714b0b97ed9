package capabilities

import (
	"maps"
	"slices"
	"strings"
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
// nameless entry or none) and a value holding NUL.
func CheckEnv(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return ArgErrorf("env", "%q is not a variable a command can be given", k)
		}
		if strings.ContainsRune(env[k], 0) {
			return ArgErrorf("env", "the value of env %q contains a NUL byte, which cannot be passed to a process", k)
		}
	}
	return nil
}

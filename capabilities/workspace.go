package capabilities

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

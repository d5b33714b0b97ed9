// Package argmax says how much of a process's command line and environment
// exec takes, so that a spec whose env could never reach a process is
// refused when it is checked, not by an exec that fails (E2BIG) as a run
// starts a command.
package argmax

import "unsafe"

// Size is what exec counts of a process started as path with argv and env
// against Limit: each string with its NUL, path's own copy among them (the
// kernel keeps the program's name beside its arguments), and a pointer to
// each argument and variable (at least one argument: Linux makes room for
// an empty one where argv has none).
func Size(path string, argv, env []string) int {
	n := len(path) + 1
	for _, s := range argv {
		n += len(s) + 1
	}
	for _, s := range env {
		n += len(s) + 1
	}
	return n + int(unsafe.Sizeof(uintptr(0)))*(max(len(argv), 1)+len(env))
}

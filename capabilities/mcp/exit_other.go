//go:build !linux

package mcp

// awaitExit cannot wait for a process without reaping it here: it returns
// false at once.
func awaitExit(int) bool { return false }

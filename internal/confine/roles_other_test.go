//go:build !linux

package confine_test

// role: the tests that need the test binary in another part run on Linux
// only.
func role() (int, bool) { return 0, false }

//go:build !unix

package filesystem

import "testing"

// mkfifo skips the test where named pipes do not exist: the transcripts that
// use one are unix transcripts (see special_unix_test.go).
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skipf("named pipes (%s) need a unix system", path)
}

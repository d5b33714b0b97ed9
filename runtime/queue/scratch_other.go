//go:build !unix

package queue

import "os"

// holdScratch has no lock to take here: without flock, a scratch directory
// left by a worker that was killed stays.
func holdScratch(string) (func(), error) { return func() {}, nil }

func sweepScratch(string) {}

// newCopyDir makes a fresh directory in base for a shipped workspace's
// copy, and returns the function that removes it; without flock, a copy
// left by a worker that was killed stays.
func newCopyDir(base, prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

func sweepCopies(string) {}

//go:build !unix

package queue

// holdScratch has no lock to take here: without flock, a scratch directory
// left by a worker that was killed stays.
func holdScratch(string) (func(), error) { return func() {}, nil }

func sweepScratch(string) {}

//go:build race

package filesystem

// raceSlack is room the allocation bounds leave for the race detector,
// whose sync.Pool drops pooled items at random, so that buffers and regexp
// machines are allocated again where a normal build reuses them: a search
// that stops at 1,000 matches allocates about 11 MB under it, 1.3 MB
// without. The bounds stay well below the sizes of the files measured.
const raceSlack = 16 << 20

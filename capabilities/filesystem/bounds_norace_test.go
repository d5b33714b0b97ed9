//go:build !race

package filesystem

// raceSlack is room the allocation bounds leave for the race detector: none
// without it.
const raceSlack = 0

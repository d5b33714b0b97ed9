//go:build !race

package webfetch

// raceEnabled: the race detector makes parsing a full-size page take
// minutes, so the tests that parse one use a smaller page under it.
const raceEnabled = false

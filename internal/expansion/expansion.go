// Package expansion bounds how far a YAML file may grow once its aliases
// are expanded: one bound, and one way of saying it, for specs and script
// files alike. Aliases let a small file describe an enormous one ("billion
// laughs"), which parsing, checking and decoding it would each build.
package expansion

import (
	"fmt"
	"math"
	"strconv"
)

// A file may hold Factor times as many bytes as it has, with its aliases
// expanded, at least Min and at most Max.
const (
	Factor = 10
	Min    = 2_000_000
	Max    = 16_000_000
)

// Limit is the most a file of fileSize bytes may hold, expanded.
func Limit(fileSize int) int { return min(max(Factor*fileSize, Min), Max) }

// Exceeded says that a file of fileSize bytes holding kind ("a spec",
// "a script") grew past its Limit; what names what was counted ("text",
// "text and key paths").
func Exceeded(kind, what string, fileSize int) string {
	return fmt.Sprintf("the %s holds more than %s of %s, the most a %s file of %s may grow to (%d times its size, at least %s, at most %s)",
		kind, ByteSize(Limit(fileSize)), what, kind, ByteSize(fileSize), Factor, ByteSize(Min), ByteSize(Max))
}

// ByteSize writes n bytes for people: 512 bytes, 2.5 KB, 16 MB.
func ByteSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 1_000_000:
		return strconv.FormatFloat(math.Round(float64(n)/100)/10, 'f', -1, 64) + " KB"
	}
	return strconv.FormatFloat(math.Round(float64(n)/100_000)/10, 'f', -1, 64) + " MB"
}

package glob

import "github.com/bmatcuk/doublestar/v4"

// ValidDoublestar reports whether p is a well-formed doublestar pattern.
func ValidDoublestar(p string) bool { return doublestar.ValidatePattern(p) }

// SplitDoublestar splits p into the longest directory prefix without meta
// characters, where a walk for it can start, and the rest.
func SplitDoublestar(p string) (base, rest string) { return doublestar.SplitPattern(p) }

// MatchDoublestar reports whether the slash path rel matches the pattern p,
// which ValidDoublestar has accepted.
func MatchDoublestar(p, rel string) bool { return doublestar.MatchUnvalidated(p, rel) }

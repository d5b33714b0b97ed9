// Package text holds the rules by which the FileSystem tools read a file's
// bytes as text, the way the behavioural reference (CPython) does: which files
// are binary, how invalid UTF-8 is replaced or reported, and where lines
// break. The tools that show files and the search that scans them use these
// rules alone, so they never disagree on what a line is.
package text

import "bytes"

// BinaryProbe is how many leading bytes are searched for a NUL byte.
const BinaryProbe = 8192

// IsBinary reports whether b, a file's leading bytes, marks a binary file: a
// NUL byte within the first BinaryProbe bytes.
func IsBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), BinaryProbe)], 0) >= 0
}

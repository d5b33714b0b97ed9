// Package text holds the rules by which the FileSystem tools read a file's
// bytes as text, the way the behavioural reference (CPython) does: which files
// are binary, how invalid UTF-8 is replaced or reported, and where lines
// break. The tools that show files and the search that scans them use these
// rules alone, so they never disagree on what a line is. It also says how
// untrusted text is shown on a terminal (Visible), for the command line.
package text

import "bytes"

// BinaryProbe is how many leading bytes are searched for a NUL byte.
const BinaryProbe = 8192

// IsBinary reports whether b, a file's leading bytes, marks a binary file: a
// NUL byte within the first BinaryProbe bytes.
//
// This is the one rule every FileSystem tool applies, as the reference does:
// read_file shows a binary file as its "[Binary file: ...]" placeholder,
// search_files and grep skip it, edit_file refuses it and file_info reports
// it binary. Nothing else is looked at, so a file whose first NUL comes
// after the first BinaryProbe bytes is text to every tool (the NUL is a
// character of its line), and UTF-16 or UTF-32 text, whose ASCII characters
// carry NUL bytes, is binary: it is not decoded, since the reference reads
// files as UTF-8 only.
func IsBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), BinaryProbe)], 0) >= 0
}

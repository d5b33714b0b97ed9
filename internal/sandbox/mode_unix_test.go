//go:build unix

package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A file of a type the mode does not name (a whiteout on the BSDs, a door
// on illumos) is no regular file: Cursor.Lstat sorted such a mode as
// KindOther before it went through fileMode, and must still.
func TestUnnamedFileTypeIsNotRegular(t *testing.T) {
	var st unix.Stat_t
	st.Mode = 0o160000 | 0o644 // S_IFWHT where there is one, unused elsewhere
	m := fileMode(&st)
	if got := kindOf(m); got != KindOther {
		t.Errorf("kindOf(fileMode(%#o)) = %v, want KindOther", st.Mode, got)
	}
	if m.IsRegular() {
		t.Errorf("fileMode(%#o) = %v, a regular file", st.Mode, m)
	}
	st.Mode = unix.S_IFREG | 0o644
	if got := kindOf(fileMode(&st)); got != KindFile {
		t.Errorf("kindOf(fileMode(S_IFREG)) = %v, want KindFile", got)
	}
}

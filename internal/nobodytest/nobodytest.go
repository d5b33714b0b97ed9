//go:build unix

// Package nobodytest runs a test again as the unprivileged user nobody:
// tests about what permission bits refuse cannot run as root, which they
// do not refuse. Only tests import it.
package nobodytest

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// UID is the uid and gid of nobody, which Rerun runs a test as.
const UID = 65534

// Rerun runs the calling test again, in a child process whose user and
// group are nobody. The child runs a copy of the test binary (the go tool
// keeps the original in a directory only its user may enter) from a
// directory it owns, which is also its temporary directory and home. The
// test is skipped with a notice when the child cannot be started as nobody
// here; a failure in the child fails it.
func Rerun(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "test.bin")
	copyFile(t, exe, bin)
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chown(dir, UID, UID))

	cmd := exec.Command(bin, "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: UID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if _, exited := errors.AsType[*exec.ExitError](err); err != nil && !exited {
		t.Skipf("notice: cannot run the test as uid %d here (%v), and root is not refused what it tests", UID, err)
	}
	require.NoError(t, err, "as uid %d:\n%s", UID, out)
	require.Contains(t, string(out), "--- PASS: "+t.Name()+" ", "the test ran as uid %d:\n%s", UID, out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, errors.Join(err, dst.Close()))
}

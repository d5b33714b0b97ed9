package confine

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// maxArg is the longest string execve takes as one argument
// (MAX_ARG_STRLEN: 32 pages of 4 KiB, its NUL counted; larger pages allow
// more). A script this long or longer cannot be sh's -c argument.
const maxArg = 32 * 4096

// scriptFD is where the shell finds a script too long for its -c
// argument.
const scriptFD = 3

// readScript is what sh -c runs in place of a script too long to be its
// argument: it reads the script from scriptFD and evaluates it in the same
// shell, $0 and the arguments unchanged, with scriptFD closed, so that the
// command and what it starts have fds 0-2 only. A script is never read
// from stdin, which the command's programs read (/dev/null). The script
// loses its trailing newlines, as the shell's parser ignores them; without
// cat the command fails with 127, as a program not found does.
const readScript = `eval "$(cat <&3 || echo exit 127)" 3<&-`

// shellArgs is sh's argv for script and, when the script is too long for
// one argument, the file the shell must get as scriptFD: a sealed memfd
// holding the script, read from its start. It is made before the rlimits,
// which RLIMIT_FSIZE would bound too.
func shellArgs(script string) ([]string, *os.File, error) {
	if len(script) < maxArg {
		return []string{"sh", "-c", script}, nil, nil
	}
	fd, err := unix.MemfdCreate("agentspec-command", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, nil, fmt.Errorf("holding the command for the shell: %w", err)
	}
	f := os.NewFile(uintptr(fd), "command")
	_, err = f.WriteString(script)
	if err == nil {
		_, err = unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
	}
	if err == nil {
		_, err = f.Seek(0, 0)
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("holding the command for the shell: %w", err)
	}
	return []string{"sh", "-c", readScript}, f, nil
}

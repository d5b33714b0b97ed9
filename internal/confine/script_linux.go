package confine

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/argmax"
)

// maxArg is the longest string execve takes as one argument
// (MAX_ARG_STRLEN: 32 pages of 4 KiB, its NUL counted; larger pages allow
// more). A script this long or longer cannot be sh's -c argument.
const maxArg = 32 * 4096

// scriptFD is where the shell finds a script too long for its -c
// argument.
const scriptFD = 3

// shellArgs is sh's argv for script and, when the script is too long for
// one argument, or for exec to take beside env (argmax.Limit), the file the
// shell must get as scriptFD: a sealed memfd holding the script, read from
// its start. It is made before the rlimits, which RLIMIT_FSIZE would bound
// too.
func shellArgs(script string, env []string) ([]string, *os.File, error) {
	argv := []string{"sh", "-c", script}
	if len(script) < maxArg {
		if limit := argmax.Limit(); limit == 0 || argmax.Size(shell, argv, env) <= limit {
			return argv, nil, nil
		}
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

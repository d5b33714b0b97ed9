package main

import (
	"os"
	"syscall"
)

// maxRSS is the largest resident set of the process and its waited-for
// descendants, in bytes (Linux reports KiB).
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss) << 10
	}
	return 0
}

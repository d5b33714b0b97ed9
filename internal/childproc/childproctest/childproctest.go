// Package childproctest is what the tests of childproc, and of capabilities
// that start processes through it, run in a child: an attempt to read the
// parent's environment and memory.
package childproctest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ReadParent tries to read the parent process's environment
// (/proc/<ppid>/environ) and its stack, where the environment a process was
// started with lives (/proc/<ppid>/mem at the [stack] line of
// /proc/<ppid>/maps). It writes one line per file: "environ: ..." and
// "mem: ...", each with the error, or how many bytes were read and the
// NUL-terminated strings among them that contain marker (only those, so
// that a test's log does not show the whole environment).
func ReadParent(w io.Writer, marker string) {
	proc := "/proc/" + strconv.Itoa(os.Getppid())
	env, err := os.ReadFile(proc + "/environ")
	if err != nil {
		fmt.Fprintf(w, "environ: %v\n", err)
	} else {
		fmt.Fprintf(w, "environ: read %d bytes; with the marker: %s\n", len(env), withMarker(env, marker))
	}
	fmt.Fprintf(w, "mem: %s\n", readStack(proc, marker))
}

func readStack(proc, marker string) string {
	maps, err := os.Open(proc + "/maps")
	if err != nil {
		return err.Error()
	}
	defer maps.Close()
	var start, end uint64
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), "[stack]") {
			lo, hi, _ := strings.Cut(strings.Fields(sc.Text())[0], "-")
			start, _ = strconv.ParseUint(lo, 16, 64)
			end, _ = strconv.ParseUint(hi, 16, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return "maps: " + err.Error()
	}
	if end <= start {
		return "maps: no [stack] line"
	}
	mem, err := os.Open(proc + "/mem")
	if err != nil {
		return err.Error()
	}
	defer mem.Close()
	stack := make([]byte, end-start)
	n, err := mem.ReadAt(stack, int64(start))
	if n == 0 && err != nil {
		return err.Error()
	}
	return fmt.Sprintf("read %d bytes of the stack; with the marker: %s", n, withMarker(stack[:n], marker))
}

func withMarker(b []byte, marker string) string {
	var found []string
	for s := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Contains(s, []byte(marker)) {
			found = append(found, string(s))
		}
	}
	return strings.Join(found, ", ")
}

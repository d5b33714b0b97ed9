package confine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// pidsRoot is where the cgroup v1 pids controller is mounted.
const pidsRoot = "/sys/fs/cgroup/pids"

// cgroupSeq numbers this process's per-command cgroups.
var cgroupSeq atomic.Uint64

// cgroup is a per-command pids cgroup (v1): the kernel exempts host root
// from RLIMIT_NPROC, so that is how a command of root is bounded.
type cgroup struct {
	dir    string
	parent string
}

// ownPidsCgroup is the directory of this process's pids cgroup. It reads
// the calling thread's: v1 places threads one by one, and /proc/self
// shows the main thread's, which may be one that joined a command's
// cgroup to fork (its goroutine locked it, so no other code runs on it,
// this included). The answer is kept: the parent never changes.
func ownPidsCgroup() (string, error) {
	ownOnce.Do(func() { ownDir, ownErr = readPidsCgroup() })
	return ownDir, ownErr
}

var (
	ownOnce sync.Once
	ownDir  string
	ownErr  error
)

func readPidsCgroup() (string, error) {
	f, err := os.Open("/proc/thread-self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" {
				return filepath.Join(pidsRoot, parts[2]), nil
			}
		}
	}
	return "", errors.New("this process is in no cgroup v1 pids hierarchy")
}

// sweepOnce removes, once per process, the empty cgroups of agentspec
// processes that died before they could.
var sweepOnce sync.Once

// newCgroup makes a pids cgroup below this process's own that holds at
// most max tasks.
func newCgroup(max int) (*cgroup, error) {
	parent, err := ownPidsCgroup()
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(func() { sweep(parent) })
	dir := filepath.Join(parent, fmt.Sprintf("agentspec-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the command's pids cgroup: %w", err)
	}
	cg := &cgroup{dir: dir, parent: parent}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		cg.remove()
		return nil, fmt.Errorf("bounding the command's pids cgroup: %w", err)
	}
	return cg, nil
}

// join moves the calling thread (only it: v1 tasks) into the cgroup, so
// that what it forks starts there. The caller's thread must end after.
func (c *cgroup) join() error {
	tid := strconv.Itoa(unix.Gettid())
	if err := os.WriteFile(filepath.Join(c.dir, "tasks"), []byte(tid), 0); err != nil {
		return fmt.Errorf("entering the command's pids cgroup: %w", err)
	}
	return nil
}

// taskFiles opens the tasks files of the cgroup and of its parent, for an
// init to move its forking thread in and out.
func (c *cgroup) taskFiles() ([]*os.File, error) {
	in, err := os.OpenFile(filepath.Join(c.dir, "tasks"), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the command's pids cgroup: %w", err)
	}
	out, err := os.OpenFile(filepath.Join(c.parent, "tasks"), os.O_WRONLY, 0)
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("opening the parent pids cgroup: %w", err)
	}
	return []*os.File{in, out}, nil
}

// moveThread writes the calling thread's id to a tasks file.
func moveThread(fd int) error {
	_, err := unix.Write(fd, []byte(strconv.Itoa(unix.Gettid())))
	return err
}

// evictSelf moves this process's threads back to the parent cgroup: the
// thread that joined to fork may outlive the fork (the runtime keeps the
// main thread), and must neither count against the command nor be killed
// with its leftovers.
func (c *cgroup) evictSelf() {
	data, err := os.ReadFile(filepath.Join(c.dir, "tasks"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if _, err := os.Stat("/proc/self/task/" + f); err == nil {
			_ = os.WriteFile(filepath.Join(c.parent, "tasks"), []byte(f), 0)
		}
	}
}

// procs lists the processes in the cgroup.
func (c *cgroup) procs() []int {
	data, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// remove deletes the cgroup. A cgroup cannot be removed while it holds a
// process, and moving one out would lift its bound, so what still runs in
// it (an unconfined command's setsid children) is killed first.
func (c *cgroup) remove() {
	for i := 0; ; i++ {
		err := unix.Rmdir(c.dir)
		if err == nil || errors.Is(err, unix.ENOENT) || i == 100 {
			return
		}
		c.evictSelf()
		for _, pid := range c.procs() {
			if pid == os.Getpid() {
				continue
			}
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(time.Duration(i) * time.Millisecond) // the killed are reaped by their parents
	}
}

// sweep removes parent's agentspec-PID-N cgroups whose process is gone;
// one that still holds a process stays (rmdir refuses).
func sweep(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "agentspec-*-*"))
	for _, dir := range dirs {
		fields := strings.Split(filepath.Base(dir), "-")
		if len(fields) != 3 || fields[1] == strconv.Itoa(os.Getpid()) {
			continue
		}
		if _, err := os.Stat("/proc/" + fields[1]); errors.Is(err, os.ErrNotExist) {
			_ = unix.Rmdir(dir)
		}
	}
}

// pidsCgroupMissing says why no per-command pids cgroup can be made, or
// "" when one can.
func pidsCgroupMissing() string {
	cg, err := newCgroup(1)
	if err != nil {
		return "no pids cgroup to bound processes when running as root (" + err.Error() + ")"
	}
	cg.remove()
	return ""
}

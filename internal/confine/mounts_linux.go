package confine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The command's view of the filesystem, built by the init in its own mount
// namespace before anything of the command runs (D13): W and T writable,
// masks and .git read-only, a minimal /dev, every other mount read-only.
// Binds use the new mount API on descriptors, so a path below W that a
// concurrently running command turned into a symlink is not followed.

// devNodes are the device files the command's /dev offers.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// writableDevs are the devices Landlock lets the command write.
var writableDevs = []string{"/dev/null", "/dev/zero", "/dev/full"}

func setupMounts(p Policy) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	// The host's device nodes, held before /dev is covered.
	devs := map[string]int{}
	defer func() {
		for _, fd := range devs {
			unix.Close(fd)
		}
	}()
	for _, name := range devNodes {
		fd, err := unix.Open("/dev/"+name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if name == "tty" || name == "full" {
				continue
			}
			return fmt.Errorf("opening /dev/%s: %w", name, err)
		}
		devs[name] = fd
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting a /proc of the command's PID namespace: %w", err)
	}
	for _, dir := range []string{p.Root, p.Temp} {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s onto itself: %w", dir, err)
		}
	}
	// A path that cannot be covered fails the command: it never runs with
	// a secret readable or a .git writable.
	for _, path := range p.Masks {
		if err := mask(p.Root, path, devs["null"]); err != nil {
			return &MaskError{Path: path, Err: err}
		}
	}
	for _, path := range p.ReadOnly {
		if err := bindReadOnly(p.Root, path); err != nil {
			return &MaskError{Path: path, Err: err}
		}
	}
	carried, err := takeBelowDev(p)
	defer func() {
		for _, c := range carried {
			unix.Close(c.tree)
		}
	}()
	if err != nil {
		return err
	}
	if err := newDev(devs, carried); err != nil {
		return err
	}
	for _, path := range []string{"/proc/sys", "/proc/sysrq-trigger"} {
		if err := bindReadOnly("/proc", path); err != nil {
			return err
		}
	}
	// The keys of every uid the namespace maps (the caller's), whose
	// system calls the seccomp filter refuses, are listed here too.
	for _, path := range []string{"/proc/keys", "/proc/key-users"} {
		if err := mask("/proc", path, devs["null"]); err != nil {
			return err
		}
	}
	return remountReadOnly(p)
}

// openBelow opens path without following a symlink: below root, no
// component may be one (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS from root),
// and the path may be longer than PATH_MAX; elsewhere, the last component
// may not. A path that does not exist, or, unless links, ends in a
// symlink, gives ok false; with links, one that ends in a symlink gives
// the link itself.
func openBelow(root, path string, links bool) (fd int, ok bool, err error) {
	if rel, relErr := filepath.Rel(root, path); relErr == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		rfd, rootErr := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if rootErr != nil {
			return -1, false, fmt.Errorf("opening %s: %w", root, rootErr)
		}
		defer unix.Close(rfd)
		fd, err = openBeneath(rfd, rel)
	} else {
		fd, err = unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	switch {
	case err == nil:
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, false, fmt.Errorf("examining %s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK && !links {
			unix.Close(fd)
			return -1, false, nil
		}
		return fd, true, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return -1, false, nil
	}
	return -1, false, fmt.Errorf("opening %s: %w", path, err)
}

// openBeneath opens rel below the directory dirfd, no component a symlink,
// a piece of at most maxPiece bytes at a time, each from the directory the
// one before reached: a command may move a directory so deep that its path
// is longer than the kernel takes in one call, and its masks must still
// be made (or a command could read what they cover).
func openBeneath(dirfd int, rel string) (int, error) {
	how := &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	at := dirfd
	for {
		piece, rest := splitPath(rel, maxPiece)
		fd, err := unix.Openat2(at, piece, how)
		if at != dirfd {
			unix.Close(at)
		}
		if err != nil || rest == "" {
			return fd, err
		}
		// A piece that ends in a symlink gives the link itself: the next
		// piece then fails with ENOTDIR, as a path through a link should.
		at, rel = fd, rest
	}
}

// maxPiece is the longest path one openat2 takes: PATH_MAX less the NUL.
const maxPiece = unix.PathMax - 1

// splitPath cuts rel at the last slash that leaves a first piece of at
// most limit bytes; rest is "" when rel fits whole, or has no such slash
// (the kernel then refuses it, ENAMETOOLONG).
func splitPath(rel string, limit int) (piece, rest string) {
	if len(rel) <= limit {
		return rel, ""
	}
	i := strings.LastIndexByte(rel[:limit+1], '/')
	if i <= 0 {
		return rel, ""
	}
	return rel[:i], rel[i+1:]
}

// mask makes path read as empty: /dev/null bound read-only over a file or
// a symlink (which then leads nowhere; what it led to is left as it is),
// an empty read-only tmpfs over a directory.
func mask(root, path string, devNull int) error {
	fd, ok, err := openBelow(root, path, true)
	if err != nil || !ok {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("examining %s: %w", path, err)
	}
	var tree int
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
		if err != nil {
			return fmt.Errorf("creating a tmpfs to mask %s: %w", path, err)
		}
		defer unix.Close(fs)
		if err := unix.FsconfigSetString(fs, "mode", "0555"); err != nil {
			return fmt.Errorf("configuring the tmpfs that masks %s: %w", path, err)
		}
		if err := unix.FsconfigSetString(fs, "size", "4k"); err != nil {
			return fmt.Errorf("configuring the tmpfs that masks %s: %w", path, err)
		}
		if err := unix.FsconfigCreate(fs); err != nil {
			return fmt.Errorf("creating the tmpfs that masks %s: %w", path, err)
		}
		tree, err = unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		if err != nil {
			return fmt.Errorf("mounting the tmpfs that masks %s: %w", path, err)
		}
	case unix.S_IFREG, unix.S_IFLNK:
		if devNull < 0 {
			return fmt.Errorf("masking %s: no /dev/null", path)
		}
		tree, err = cloneReadOnly(devNull, false)
		if err != nil {
			return fmt.Errorf("masking %s: %w", path, err)
		}
	default:
		return nil // a FIFO, socket or device: nothing to read
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("masking %s: %w", path, err)
	}
	return nil
}

// cloneReadOnly returns a detached read-only copy of the mount tree at fd.
func cloneReadOnly(fd int, recursive bool) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	var setFlags uint = unix.AT_EMPTY_PATH
	if recursive {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(fd, "", flags)
	if err != nil {
		return -1, fmt.Errorf("copying the mount: %w", err)
	}
	if err := unix.MountSetattr(tree, "", setFlags, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("making the copy read-only: %w", err)
	}
	return tree, nil
}

// bindReadOnly binds path read-only onto itself; a missing path is
// skipped.
func bindReadOnly(root, path string) error {
	fd, ok, err := openBelow(root, path, false)
	if err != nil || !ok {
		return err
	}
	defer unix.Close(fd)
	tree, err := cloneReadOnly(fd, true)
	if err != nil {
		return fmt.Errorf("binding %s read-only: %w", path, err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("binding %s read-only: %w", path, err)
	}
	return nil
}

// carriedTree is a copy of W's or T's mount tree, masks and read-only
// binds included, to be put back at path once /dev is covered.
type carriedTree struct {
	path string
	tree int
}

// takeBelowDev copies the trees of W and T that lie below /dev (a TMPDIR
// or a workspace on /dev/shm), which the command's /dev would otherwise
// hide from the command, from Landlock's rules and from its directory. One
// below the other comes with the outer one.
func takeBelowDev(p Policy) ([]carriedTree, error) {
	var dirs []string
	for _, dir := range []string{p.Root, p.Temp} {
		if belowAny([]string{"/dev"}, dir) && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	var out []carriedTree
	for _, dir := range dirs {
		if dir == "/dev" {
			return out, fmt.Errorf("%s cannot be a command's directory: the command's /dev replaces it", dir)
		}
		if slices.ContainsFunc(dirs, func(d string) bool { return d != dir && belowAny([]string{d}, dir) }) {
			continue
		}
		tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return out, fmt.Errorf("copying %s to put it back in the command's /dev: %w", dir, err)
		}
		out = append(out, carriedTree{path: dir, tree: tree})
	}
	return out, nil
}

// newDev covers /dev with a read-only tmpfs holding only the devNodes (the
// host's nodes, bound read-only), /dev/fd and the std links, empty pts
// and shm directories, and the carried trees of W and T at their paths,
// below directories made for them, read-only as the rest. The host's /dev
// holds disks a command of root could read raw, past every mask.
func newDev(devs map[string]int, carried []carriedTree) error {
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mounting the command's /dev: %w", err)
	}
	for _, name := range devNodes {
		fd, ok := devs[name]
		if !ok {
			continue
		}
		target := "/dev/" + name
		if err := os.WriteFile(target, nil, 0o666); err != nil {
			return fmt.Errorf("creating %s: %w", target, err)
		}
		// Read-only, as a device is still read and written through it:
		// the node is the host's own inode, and a command of its owner
		// (root) could otherwise chmod, chown or touch the host's device.
		tree, err := cloneReadOnly(fd, false)
		if err != nil {
			return fmt.Errorf("copying the host's %s: %w", target, err)
		}
		err = unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(tree)
		if err != nil {
			return fmt.Errorf("binding the host's %s: %w", target, err)
		}
	}
	for link, to := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(to, "/dev/"+link); err != nil {
			return fmt.Errorf("creating /dev/%s: %w", link, err)
		}
	}
	for _, dir := range []string{"pts", "shm"} {
		if err := os.Mkdir("/dev/"+dir, 0o755); err != nil {
			return fmt.Errorf("creating /dev/%s: %w", dir, err)
		}
	}
	for _, c := range carried {
		if err := os.MkdirAll(c.path, 0o755); err != nil {
			return fmt.Errorf("creating %s in the command's /dev: %w", c.path, err)
		}
		if err := unix.MoveMount(c.tree, "", unix.AT_FDCWD, c.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("putting %s back in the command's /dev: %w", c.path, err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/dev", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the command's /dev read-only: %w", err)
	}
	return nil
}

// remountReadOnly makes every mount read-only but W, T (and what is below
// them), the fresh /proc and /dev, whose files are the command's own or
// bound above. mount_setattr changes the one flag, so the flags a mount
// from the host has locked (nosuid, nodev, noexec, atime) stay as they are.
func remountReadOnly(p Policy) error {
	points, err := mountPoints()
	if err != nil {
		return err
	}
	keep := []string{p.Root, p.Temp, "/proc", "/dev"}
	for _, mp := range points {
		if belowAny(keep, mp) {
			continue
		}
		err := unix.MountSetattr(unix.AT_FDCWD, mp, unix.AT_SYMLINK_NOFOLLOW, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EACCES), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTDIR):
			// Hidden below a mask or an over-mount, or out of reach: the
			// command cannot reach it through this path either.
		default:
			return fmt.Errorf("making %s read-only: %w", mp, err)
		}
	}
	return nil
}

// belowAny reports whether path is one of dirs or below one.
func belowAny(dirs []string, path string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// mountPoints lists this mount namespace's mount points, each once, in
// mount order.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("listing the mounts: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if !seen[mp] {
			seen[mp] = true
			points = append(points, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("listing the mounts: %w", err)
	}
	return points, nil
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

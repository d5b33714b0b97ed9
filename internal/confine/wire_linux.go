package confine

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
)

// The parent and the re-executed helper talk through two pipes the helper
// gets as fds 3 and 4, never through argv or the environment, which the
// command could read: the parent writes one request on fd 3 (a 4-byte
// length, then the request in encoding/gob, which keeps a path's bytes
// where JSON would replace those that are not UTF-8) and, in confined mode,
// keeps its end open as a lifeline; the helper writes reports on fd 4, one
// line each.
const (
	requestFD = 3
	reportFD  = 4
	// With request.Cgroup, the tasks files of the command's pids cgroup
	// and of its parent, opened by the parent (v1 checks a migration
	// against the opener's credentials).
	cgroupTasksFD = 5
	parentTasksFD = 6

	// initArg (argv[1]) and initEnv (the helper's only variable) mark a
	// process started as the helper; Main checks both.
	initArg = "agentspec-confine-init"
	initEnv = "AGENTSPEC_CONFINE_INIT=1"

	// maxRequest bounds what the helper reads before it trusts a length.
	maxRequest = 64 << 20
)

// request is everything the helper needs to run one command.
type request struct {
	Script  string
	Dir     string
	Env     []string
	Sandbox bool
	Policy  Policy
	// SetNproc asks for RLIMIT_NPROC = Policy.MaxProcs (the bound when no
	// pids cgroup holds the command).
	SetNproc bool
	// Cgroup says fds cgroupTasksFD and parentTasksFD are open.
	Cgroup bool
	// MapIDs, when set, is what the init maps in its user namespace.
	MapIDs *idMap
}

func writeRequest(w io.Writer, r request) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(r); err != nil {
		return fmt.Errorf("encoding the command for the confinement helper: %w", err)
	}
	body := buf.Bytes()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(body)))
	if _, err := w.Write(append(n[:], body...)); err != nil {
		return fmt.Errorf("sending the command to the confinement helper: %w", err)
	}
	return nil
}

func readRequest(rd io.Reader) (request, error) {
	var n [4]byte
	if _, err := io.ReadFull(rd, n[:]); err != nil {
		return request{}, fmt.Errorf("reading the command's length: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxRequest {
		return request{}, fmt.Errorf("the command's request is %d bytes, more than %d", size, maxRequest)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(rd, body); err != nil {
		return request{}, fmt.Errorf("reading the command: %w", err)
	}
	var r request
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&r); err != nil {
		return request{}, fmt.Errorf("decoding the command: %w", err)
	}
	if r.Env == nil {
		// gob sends an empty slice as nothing; nil would have the shell
		// inherit the helper's environment.
		r.Env = []string{}
	}
	return r, nil
}

// Report lines from the helper.
const (
	reportStarted   = "started"     // confined: the shell runs
	reportError     = "error "      // setup failed: then the errno (0 if none) and why
	reportMaskError = "mask-error " // a Policy path could not be covered: the errno, the path (Go-quoted), why
	reportDirError  = "dir-error "  // the command's directory could not be entered: the errno, why
	reportStatus    = "status "     // confined: the shell's wait status, decimal
)

// helperError is a failure the helper reported: its text, and the errno
// behind it, which errors.Is and errors.As find.
type helperError struct {
	msg   string
	errno syscall.Errno
}

func (e *helperError) Error() string { return e.msg }

func (e *helperError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// parseFailure reads the rest of a reportError line.
func parseFailure(line string) error {
	num, msg, ok := strings.Cut(strings.TrimSpace(line), " ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return &helperError{msg: strings.TrimSpace(line)}
	}
	return &helperError{msg: msg, errno: syscall.Errno(n)}
}

// parseMaskFailure reads the rest of a reportMaskError line.
func parseMaskFailure(line string) error {
	num, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return parseFailure(line)
	}
	path, _ := strconv.Unquote(quoted)
	cause := parseFailure(num + " " + strings.TrimPrefix(rest[len(quoted):], " "))
	return &MaskError{Path: path, Err: cause}
}

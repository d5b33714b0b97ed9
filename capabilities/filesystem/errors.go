package filesystem

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/agentspec/agentspec/capabilities"
)

// osError sorts an error from the descriptor helpers into the two kinds. What
// the model can act on (a permission, a missing or mistyped path, a name the
// filesystem refuses) becomes a retry, an OS error rendered as Python renders
// it, "[Errno 13] Permission denied: 'notes.txt'", with the root-relative name;
// everything else (a full or read-only disk, an I/O error) is returned fatal.
// Neither ever carries an absolute host path: the helpers only know
// root-relative names.
func osError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := capabilities.AsRetry(err); ok {
		return err
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	switch errno {
	case syscall.ENAMETOOLONG:
		return errTooLong
	case syscall.ELOOP:
		return errLoopOS
	case syscall.EILSEQ:
		return errEncoding
	case syscall.EACCES, syscall.EPERM, syscall.ENOENT, syscall.ENOTDIR, syscall.EISDIR:
		// C's strerror text ("Permission denied"): Go's table holds it in
		// lower case.
		s := errno.Error()
		r, n := utf8.DecodeRuneInString(s)
		msg := fmt.Sprintf("[Errno %d] %c%s", int(errno), unicode.ToUpper(r), s[n:])
		var pe *os.PathError
		if errors.As(err, &pe) {
			msg += ": " + pyRepr(pe.Path)
		}
		return &capabilities.RetryError{Message: msg}
	}
	return fmt.Errorf("filesystem: %w", err)
}

package confine

import (
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseFailureKeepsTheErrno(t *testing.T) {
	t.Parallel()
	err := parseFailure("2 entering the command's directory: chdir /w/gone: no such file or directory\n")
	assert.EqualError(t, err, "entering the command's directory: chdir /w/gone: no such file or directory")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, err, syscall.ENOENT)

	err = parseFailure("0 the init could not mount /proc")
	assert.EqualError(t, err, "the init could not mount /proc")
	assert.NotErrorIs(t, err, fs.ErrNotExist)

	assert.EqualError(t, parseFailure("garbled"), "garbled")
}

package confine

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestParseMaskFailure(t *testing.T) {
	t.Parallel()
	err := parseMaskFailure(`13 "/w/odd \"name\"\n" opening /w/odd: permission denied` + "\n")
	me, ok := errors.AsType[*MaskError](err)
	require.True(t, ok, "a *MaskError, got %v", err)
	assert.Equal(t, "/w/odd \"name\"\n", me.Path)
	assert.EqualError(t, err, "opening /w/odd: permission denied")
	assert.ErrorIs(t, err, syscall.EACCES)

	assert.EqualError(t, parseMaskFailure("0 unquoted"), "unquoted", "a garbled line is still a failure")
}

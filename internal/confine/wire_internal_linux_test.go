package confine

import (
	"bytes"
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

// The request reaches the helper byte for byte: a path is any bytes but
// NUL and need not be UTF-8, and a mask on a path the wire changed would
// cover nothing. An empty environment stays empty, not nil, which
// os.StartProcess would read as "inherit the init's".
func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{{"A=\xff", "B=2"}, {}} {
		want := request{
			Script: "cat '\xff\xfe'", Dir: "/w/d\xfe", Env: env, Sandbox: true,
			Policy: Policy{
				Root: "/w\x80", Temp: "/t", Masks: []string{"/w\x80/.env\xff", "/w\x80/keys"},
				ReadOnly: []string{"/w\x80/\xc3.git"}, MaxProcs: 7, MaxFileBytes: 9,
			},
			SetNproc: true, Cgroup: true, MapIDs: &idMap{UID: 1000, GID: 1001},
		}
		var b bytes.Buffer
		require.NoError(t, writeRequest(&b, want))
		got, err := readRequest(&b)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.NotNil(t, got.Env, "an empty environment arrives empty, not nil")
	}
}

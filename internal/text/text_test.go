package text

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsBinary(t *testing.T) {
	t.Parallel()
	at := func(i int) []byte {
		b := bytes.Repeat([]byte("a"), i+1)
		b[i] = 0
		return b
	}
	assert.False(t, IsBinary(nil))
	assert.False(t, IsBinary([]byte("text\n")))
	assert.True(t, IsBinary(at(0)))
	assert.True(t, IsBinary(at(BinaryProbe-1)), "the last byte probed counts")
	assert.False(t, IsBinary(at(BinaryProbe)), "the next does not")
}

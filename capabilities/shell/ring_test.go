package shell

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRingKeepsTheTail(t *testing.T) {
	t.Parallel()
	r := newRing(8)
	r.Write([]byte("abc"))
	assert.Equal(t, "abc", r.String())
	r.Write([]byte("defgh"))
	assert.Equal(t, "abcdefgh", r.String())
	r.Write([]byte("ij"))
	assert.Equal(t, "cdefghij", r.String())
	r.Write([]byte("0123456789"))
	assert.Equal(t, "23456789", r.String())
	assert.Equal(t, int64(20), r.Total())
}

func TestRingRandomWrites(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for size := 1; size < 20; size++ {
		r := newRing(size)
		var all []byte
		for range 50 {
			p := make([]byte, rng.IntN(2*size+1))
			for i := range p {
				p[i] = byte('a' + rng.IntN(26))
			}
			r.Write(p)
			all = append(all, p...)
			want := all[max(0, len(all)-size):]
			if !assert.True(t, bytes.Equal(want, r.Bytes()), "size %d", size) {
				return
			}
		}
		assert.Equal(t, int64(len(all)), r.Total())
	}
}

func TestRingDecodesWithReplacement(t *testing.T) {
	t.Parallel()
	r := newRing(4)
	r.Write([]byte("xé€")) // the tail cuts é in two
	assert.Equal(t, "\ufffd€", r.String())
}

package expansion

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestByteSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 bytes", 999: "999 bytes", 1000: "1 KB", 2549: "2.5 KB", 999_949: "999.9 KB",
		1_000_000: "1 MB", 16_000_000: "16 MB", 2_750_000: "2.8 MB"} {
		assert.Equal(t, want, ByteSize(n), "%d", n)
	}
}

func TestLimit(t *testing.T) {
	t.Parallel()
	for size, want := range map[int]int{0: Min, 1000: Min, 300_000: 3_000_000, 2_000_000: Max} {
		assert.Equal(t, want, Limit(size), "%d", size)
	}
}

package providers

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A joiner gives back exactly what was written, whatever the pieces' sizes
// against its chunks: none, tiny, a chunk's size, several chunks at once.
func TestJoinerKeepsEveryByte(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	sizes := [][]int{
		{},
		{0, 0},
		{1, 2, 3},
		{joinChunk},
		{joinChunk - 1, 1, 1},
		{3*joinChunk + 7},
		{joinChunk / 2, joinChunk, joinChunk/2 + 1},
	}
	var random []int
	for range 5000 {
		random = append(random, rng.IntN(64))
	}
	sizes = append(sizes, random)
	for i, ns := range sizes {
		var j joiner
		var want strings.Builder
		for k, n := range ns {
			piece := strings.Repeat(string(rune('a'+(i+k)%26)), n)
			j.WriteString(piece)
			want.WriteString(piece)
		}
		if got := j.String(); got != want.String() {
			t.Fatalf("case %d: got %d bytes, want %d (or the bytes differ)", i, len(got), want.Len())
		}
		if again := j.String(); again != want.String() {
			t.Fatalf("case %d: a second String differs", i)
		}
	}
}

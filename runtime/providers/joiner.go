package providers

import (
	"strings"
	"unsafe"
)

// joiner joins streamed pieces, such as a tool call's arguments in pieces
// of a few bytes, in time linear in their total size at any size: the
// pieces fill chunks of at most joinChunk bytes, which stay in the
// processor's cache as they fill, and the chunks are copied into the result
// once. A strings.Builder alone does as well up to the cache's size; past
// it, each growth copies everything so far through memory, and a 1 MiB
// argument cost 1.75 times as much a byte as a 64 KiB one
// (BenchmarkStreamedArguments). Up to joinChunk a joiner is one growing
// slice, as a strings.Builder is.
type joiner struct {
	full [][]byte // chunks filled
	cur  []byte   // the chunk being filled
	n    int      // bytes in full
}

// joinChunk is the size of a full chunk: well within a core's L2 cache
// on any current server processor.
const joinChunk = 64 << 10

// WriteString adds s. It is small enough to be inlined, so that a piece of
// a few bytes costs what it costs a strings.Builder.
func (j *joiner) WriteString(s string) {
	if len(j.cur)+len(s) > joinChunk {
		j.spill(s)
		return
	}
	j.cur = append(j.cur, s...)
}

// spill adds s, which does not fit the current chunk, filling chunks.
func (j *joiner) spill(s string) {
	for len(j.cur)+len(s) > joinChunk {
		k := joinChunk - len(j.cur)
		j.full = append(j.full, append(j.cur, s[:k]...))
		j.n += joinChunk
		s = s[k:]
		j.cur = make([]byte, 0, joinChunk)
	}
	j.cur = append(j.cur, s...)
}

// String returns everything written so far. Like a strings.Builder's, it
// shares its bytes with the joiner, which never changes a byte once
// written.
func (j *joiner) String() string {
	if len(j.full) == 0 {
		return unsafe.String(unsafe.SliceData(j.cur), len(j.cur))
	}
	var b strings.Builder
	b.Grow(j.n + len(j.cur))
	for _, c := range j.full {
		b.Write(c)
	}
	b.Write(j.cur)
	return b.String()
}

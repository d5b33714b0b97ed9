package getdents

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// record is one linux_dirent64 as the kernel lays it out: 8-byte aligned,
// the name NUL-terminated and padded.
func record(ino uint64, typ uint8, name string) []byte {
	n := int(offName) + len(name) + 1
	n = (n + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b[offIno:], ino)
	binary.NativeEndian.PutUint16(b[offReclen:], uint16(n))
	b[offType] = typ
	copy(b[offName:], name)
	return b
}

func TestEach(t *testing.T) {
	t.Parallel()
	type entry struct {
		name string
		typ  uint8
	}
	var buf []byte
	for _, r := range [][]byte{
		record(1, unix.DT_DIR, "."),
		record(2, unix.DT_DIR, ".."),
		record(3, unix.DT_REG, "a.go"),
		record(0, unix.DT_REG, "deleted"), // no inode: a hole left by a removal
		record(4, unix.DT_LNK, "a name exactly 24 bytes"),
		record(5, unix.DT_UNKNOWN, "x"),
	} {
		buf = append(buf, r...)
	}
	tests := []struct {
		name string
		buf  []byte
		want []entry
	}{
		{"whole", buf, []entry{{".", unix.DT_DIR}, {"..", unix.DT_DIR}, {"a.go", unix.DT_REG},
			{"a name exactly 24 bytes", unix.DT_LNK}, {"x", unix.DT_UNKNOWN}}},
		{"empty", nil, nil},
		{"cut mid-record", buf[:len(record(1, 0, "."))+5], []entry{{".", unix.DT_DIR}}},
		{"zero reclen", make([]byte, 64), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []entry
			Each(tt.buf, func(start, end int, typ uint8) {
				got = append(got, entry{string(tt.buf[start:end]), typ})
			})
			assert.Equal(t, tt.want, got)
		})
	}
}

package search

import (
	"bytes"
	"regexp/syntax"
)

// finder looks for a literal by its rarest byte: bytes.IndexByte runs at
// vector speed over the long stretches without that byte, and each hit is
// verified in place.
type finder struct {
	lit  []byte
	rare int // offset in lit of its rarest byte
}

func newFinder(lit []byte) finder {
	f := finder{lit: lit}
	for i, c := range lit {
		if byteRank[c] < byteRank[lit[f.rare]] {
			f.rare = i
		}
	}
	return f
}

// index returns the offset of the first occurrence of the literal in b, or -1.
func (f *finder) index(b []byte) int {
	c := f.lit[f.rare]
	for i := f.rare; i < len(b); {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return -1
		}
		at := i + j - f.rare
		if at+len(f.lit) > len(b) {
			return -1
		}
		if bytes.Equal(b[at:at+len(f.lit)], f.lit) {
			return at
		}
		i += j + 1
	}
	return -1
}

// requiredLiteral returns a string every match of re contains, as long as it
// can find, or "". Case-folded literals do not count.
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if s := requiredLiteral(sub); len(s) > len(best) {
				best = s
			}
		}
		return best
	}
	return ""
}

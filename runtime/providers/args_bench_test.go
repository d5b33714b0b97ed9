package providers

import (
	"strings"
	"testing"
)

// BenchmarkStreamedArguments assembles one tool call's arguments streamed
// in 4-byte pieces, as a provider streams a large file's content: the time
// per byte must stay flat from 64 KiB to 1 MiB (linear), where appending to
// the string each time grew with the square of the size.
func BenchmarkStreamedArguments(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(map[int]string{64 << 10: "64KiB", 1 << 20: "1MiB"}[size], func(b *testing.B) {
			piece := "abcd"
			b.SetBytes(int64(size))
			for b.Loop() {
				var a assembled
				for range size / len(piece) {
					a.appendArgs(0, piece)
				}
				a.flushArgs()
				if len(a.calls[0].FunctionCall.Arguments) != size {
					b.Fatal("arguments lost")
				}
			}
		})
	}
}

// Pieces streamed for two calls, interleaved, end up with their own call.
func TestStreamedArgumentsByCall(t *testing.T) {
	t.Parallel()
	var a assembled
	for _, p := range []struct {
		i     int
		piece string
	}{{0, `{"pa`}, {1, `{"x":`}, {0, `th":"a"}`}, {1, `1}`}} {
		a.appendArgs(p.i, p.piece)
	}
	a.flushArgs()
	if got := a.calls[0].FunctionCall.Arguments + "|" + a.calls[1].FunctionCall.Arguments; got != `{"path":"a"}|{"x":1}` {
		t.Fatalf("got %s", got)
	}
	if !strings.HasPrefix(a.calls[1].Type, "function") {
		t.Fatalf("call 1 is %q", a.calls[1].Type)
	}
}

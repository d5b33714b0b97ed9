package confine_test

import (
	"os/exec"
	"testing"

	"github.com/agentspec/agentspec/internal/confine"
)

// BenchmarkStart measures what confinement adds to running `true`; "exec"
// is the anchor, /bin/sh -c true started directly.
func BenchmarkStart(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			if m.sandbox {
				if err := confine.Available(); err != nil {
					b.Skip(err)
				}
			}
			bx := newBox(b)
			c := confine.Command{Script: "true", Dir: bx.root, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: m.sandbox,
				Policy: confine.Policy{Root: bx.root, Temp: bx.temp}}
			for b.Loop() {
				p, err := confine.Start(b.Context(), c)
				if err != nil {
					b.Fatal(err)
				}
				if exit, err := p.Wait(); err != nil || exit.Code != 0 {
					b.Fatal(exit, err)
				}
			}
		})
	}
}

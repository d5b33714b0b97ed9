// Package probe loads the spec files named on the command line with a zero
// spec.Loader and prints each verdict: the programs beside it differ only
// in what they link.
package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/spec"
)

// Main prints, for each file argument, "NAME: ok" or "NAME: " and the
// loader's error, its file names made relative.
func Main() {
	for _, path := range os.Args[1:] {
		verdict := "ok"
		if _, err := new(spec.Loader).LoadFile(path); err != nil {
			verdict = strings.ReplaceAll(err.Error(), filepath.Dir(path)+string(filepath.Separator), "")
		}
		fmt.Printf("%s: %s\n", filepath.Base(path), verdict)
	}
}

package spec

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a Loader accepts does not depend on what the program links: two
// programs, one linking package spec alone and one linking the runtime and
// the whole command line besides, load the same specs with a zero Loader
// (a valid one, settings a provider cannot honour, a model that is not a
// string, an unknown provider, one agentspec cannot run, built-in capability
// types) and print the same verdicts. Linking once changed them, through a
// model check and capability types registered by init() functions.
func TestLoaderVerdictDoesNotDependOnLinking(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	specs, err := filepath.Glob(filepath.Join("testdata", "linkprobe", "specs", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	verdicts := func(program string) string {
		// go run keeps the programs it links in the build cache, so only a
		// change relinks them.
		run := exec.Command(goCmd, append([]string{"run", "./" + filepath.ToSlash(filepath.Join("testdata", "linkprobe", program))}, specs...)...)
		var stderr strings.Builder
		run.Stderr = &stderr
		out, err := run.Output()
		require.NoError(t, err, "%s", stderr.String())
		return string(out)
	}
	alone, linked := verdicts("speconly"), verdicts("linked")
	assert.Len(t, strings.Split(strings.TrimSuffix(alone, "\n"), "\n"), len(specs), "one verdict per spec")
	assert.Contains(t, alone, `unknown model provider "opneai"`, "the loader's own checks run in both")
	assert.Equal(t, alone, linked)
}

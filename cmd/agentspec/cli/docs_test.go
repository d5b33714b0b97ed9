package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// repoRoot is the module root, two levels above this package.
const repoRoot = "../../.."

// The docs must not drift from the code: every spec in examples/ and every YAML
// block of the README loads.

func TestExampleSpecsValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*", "agent.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		if strings.Contains(f, "custom-capability") {
			continue // needs its own binary's Clock type; its package test validates it
		}
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			_, err := spec.LoadFile(f)
			assert.NoError(t, err)
		})
	}
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

func TestReadmeYAMLBlocksValidate(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	blocks := yamlBlock.FindAllSubmatch(readme, -1)
	require.NotEmpty(t, blocks)
	for i, b := range blocks {
		l := spec.Loader{LookupEnv: func(string) (string, bool) { return "", false }}
		_, err := l.Load(fmt.Sprintf("README-block-%d.yaml", i+1), b[1])
		assert.NoError(t, err, "README yaml block %d:\n%s", i+1, b[1])
	}
}

var readmeCommand = regexp.MustCompile("(?m)^\\| `agentspec ([a-z]+)")

func TestReadmeListsEveryCommand(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	var documented []string
	for _, m := range readmeCommand.FindAllSubmatch(readme, -1) {
		documented = append(documented, string(m[1]))
	}
	var real []string
	for _, c := range newRootCmd().Commands() {
		if !c.Hidden && c.Name() != "help" {
			real = append(real, c.Name())
		}
	}
	sort.Strings(documented)
	sort.Strings(real)
	assert.Equal(t, real, documented, "the README's command table and the CLI must list the same commands")
}

// The schema committed at the repository root, which the examples' $schema
// lines name, is what "agentspec schema" prints: it cannot drift from the
// code.
func TestCommittedSchemaIsCurrent(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join(repoRoot, "agentspec.schema.json"))
	require.NoError(t, err, "agentspec.schema.json must be committed at the repository root: run `make schema`")
	// The binary's, not this test process's: tests register types of their own.
	printed, err := exec.Command(agentspecBinary(t), "schema").Output()
	require.NoError(t, err)
	assert.True(t, string(committed) == string(printed),
		"agentspec.schema.json is out of date: run `make schema` at the repository root and commit the result")
}

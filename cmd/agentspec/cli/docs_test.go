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

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/pipeline"
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
		name := fmt.Sprintf("README-block-%d.yaml", i+1)
		if pipeline.IsPipeline(b[1]) {
			_, err := (&pipeline.Loader{Specs: &l}).Load(name, b[1])
			assert.NoError(t, err, "README yaml block %d, a pipeline:\n%s", i+1, b[1])
			continue
		}
		_, err := l.Load(name, b[1])
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

var (
	readmeRow  = regexp.MustCompile("(?m)^\\| `agentspec ([a-z]+)([^`]*)` \\|")
	readmeFlag = regexp.MustCompile(`(?:^|[\s\[|])(--[a-z][a-z-]*|-[a-zA-Z])\b`)
)

// Every flag the README's command table shows exists on its command, and
// is not one of the hidden aliases.
func TestReadmeFlagsExist(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	root := newRootCmd()
	rows := readmeRow.FindAllSubmatch(readme, -1)
	require.NotEmpty(t, rows)
	for _, row := range rows {
		name, usage := string(row[1]), string(row[2])
		cmd, _, err := root.Find([]string{name})
		require.NoError(t, err, name)
		for _, m := range readmeFlag.FindAllStringSubmatch(usage, -1) {
			flag := m[1]
			var found bool
			for _, c := range append([]*cobra.Command{cmd}, cmd.Commands()...) {
				fl := c.Flags()
				f := fl.Lookup(strings.TrimLeft(flag, "-"))
				if len(flag) == 2 {
					f = fl.ShorthandLookup(flag[1:])
				}
				if f == nil {
					f = c.InheritedFlags().Lookup(strings.TrimLeft(flag, "-"))
				}
				if f != nil {
					assert.False(t, f.Hidden, "agentspec %s %s is a hidden alias; the README shows the current spelling", name, flag)
					found = true
					break
				}
			}
			assert.True(t, found, "the README shows agentspec %s %s, which the command does not have", name, flag)
		}
	}
}

// The one spelling of JSON output works on every command that has one, and
// the old spellings stay out of --help.
func TestOneSpellingForJSONOutput(t *testing.T) {
	root := newRootCmd()
	for _, path := range [][]string{{"run"}, {"validate"}, {"tools"}, {"tool"}, {"cache", "stats"}} {
		cmd, _, err := root.Find(path)
		require.NoError(t, err)
		out := cmd.Flags().Lookup("output")
		require.NotNil(t, out, "%v has --output", path)
		assert.Equal(t, "o", out.Shorthand, "%v has -o", path)
		for _, old := range []string{"format", "json"} {
			f := cmd.Flags().Lookup(old)
			require.NotNil(t, f, "%v keeps --%s as an alias", path, old)
			assert.True(t, f.Hidden, "%v --%s is hidden", path, old)
		}
	}
}

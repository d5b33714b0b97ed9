package cli

import (
	"fmt"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/pipeline"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// repoRoot is the module root, two levels above this package.
const repoRoot = "../../.."

// The docs must not drift from the code: every spec in examples/ and every YAML
// block of the README and of docs/ loads.

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

// Every example pipeline validates as shipped, over its own workspace: a
// capability whose options use a step's vars is built per job, not here.
func TestExamplePipelinesValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "examples", "pipelines", "*", "pipeline.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			ws := filepath.Join(filepath.Dir(f), "workspace")
			if _, err := os.Stat(ws); err != nil {
				ws = filepath.Dir(f)
			}
			code, _, stderr := runCLI(t, "", "validate", f, "--workspace", ws)
			assert.Equal(t, 0, code, stderr)
		})
	}
}

var (
	yamlBlock  = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	scriptFile = regexp.MustCompile(`(?m)^turns:`)
)

// docPages returns README.md and every page of docs/, as paths below
// repoRoot.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages, "docs/ holds the documentation pages")
	return append([]string{filepath.Join(repoRoot, "README.md")}, pages...)
}

// Every YAML block of the README and of docs/ loads: a spec as a spec, a
// pipeline as a pipeline, and a scripted model's file (top-level turns:) as
// a script.
func TestReadmeYAMLBlocksValidate(t *testing.T) {
	scripts := 0
	for _, page := range docPages(t) {
		name := strings.TrimPrefix(filepath.ToSlash(page), repoRoot+"/")
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for i, b := range yamlBlock.FindAllSubmatch(text, -1) {
			file := fmt.Sprintf("%s-block-%d.yaml", strings.TrimSuffix(filepath.Base(page), ".md"), i+1)
			l := spec.Loader{LookupEnv: func(string) (string, bool) { return "", false }}
			switch {
			case scriptFile.Match(b[1]):
				scripts++
				_, err = script.Parse(file, b[1])
				assert.NoError(t, err, "%s yaml block %d, a script:\n%s", name, i+1, b[1])
			case pipeline.IsPipeline(b[1]):
				_, err = (&pipeline.Loader{Specs: &l}).Load(file, b[1])
				assert.NoError(t, err, "%s yaml block %d, a pipeline:\n%s", name, i+1, b[1])
			default:
				_, err = l.Load(file, b[1])
				assert.NoError(t, err, "%s yaml block %d:\n%s", name, i+1, b[1])
			}
		}
	}
	assert.GreaterOrEqual(t, scripts, 3, "docs/scripted-models.md shows scripts as yaml blocks, which load")
}

// The reference of the scripted-model format lists every key the parser
// accepts, each in its section's table: the parser's own list of keys, from
// its unknown-key message, against the page.
func TestDocsScriptedModelKeys(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "scripted-models.md"))
	require.NoError(t, err)
	for _, tc := range []struct{ where, section, src string }{
		{"the file", "## The file", "zzz: 1\nturns: [{text: x}]\n"},
		{"a turn", "## A turn", "turns:\n  - {text: x, zzz: 1}\n"},
		{"a tool call", "### Tool calls", "turns:\n  - tool_calls: [{name: a, zzz: 1}]\n"},
		{"expect", "## Expectations", "turns:\n  - {text: x, expect: {zzz: 1}}\n"},
		{"usage", "## A turn", "turns:\n  - {text: x, usage: {zzz: 1}}\n"},
	} {
		_, err := script.Parse("s.yaml", []byte(tc.src))
		require.Error(t, err, tc.where)
		_, list, ok := strings.Cut(err.Error(), "the keys are ")
		require.True(t, ok, "%s: %v", tc.where, err)
		section := markdownSection(string(page), tc.section)
		require.NotEmpty(t, section, "docs/scripted-models.md has a section %q", tc.section)
		for _, key := range strings.Split(list, ", ") {
			row := "\n| `" + key + "` |"
			if tc.where == "usage" {
				row = key // the turn's usage row: {input_tokens, output_tokens}
			}
			assert.Contains(t, section, row, "docs/scripted-models.md documents %s's key %s under %q", tc.where, key, tc.section)
		}
	}
}

// markdownSection returns the text under heading, up to the next heading.
func markdownSection(page, heading string) string {
	_, rest, ok := strings.Cut(page, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// The README is a first read: what agentspec is, the set-up commands, a
// spec, the commands and links. Everything else has its page in docs/.
func TestReadmeIsShort(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(readme), "\n")
	assert.LessOrEqual(t, lines, 250, "README.md has %d lines: move the detail to a page of docs/ and link it", lines)
}

// Every page of docs/ is linked from docs/index.md and from the README.
func TestDocsPagesAreLinked(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(repoRoot, "docs", "index.md"))
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "](docs/index.md)")
	for _, page := range docPages(t)[1:] {
		base := filepath.Base(page)
		if base == "index.md" {
			continue
		}
		assert.Contains(t, string(index), "]("+base+")", "docs/index.md links %s", base)
		assert.Contains(t, string(readme), "](docs/"+base+")", "README.md links docs/%s", base)
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

// The README's exit codes say which commands a signal ends with 0: those
// for which it is the ordinary end, rather than claim 130 and 143 for every
// command.
func TestReadmeExitCodesNameTheServers(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(readme)), " ")
	start := strings.Index(text, "Every command follows the same exit codes")
	require.GreaterOrEqual(t, start, 0)
	sentence, _, _ := strings.Cut(text[start:], ". ")
	for _, c := range newRootCmd().Commands() {
		if c.Annotations[signalEndsCleanly] != "" {
			assert.Contains(t, sentence, "`agentspec "+c.Name()+"`", "the exit codes name %s, which a signal ends with 0", c.Name())
		}
	}
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
	var withOutput []string
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		name := cmd.CommandPath()
		if out := cmd.Flags().Lookup("output"); out != nil {
			withOutput = append(withOutput, name)
			assert.Equal(t, "o", out.Shorthand, "%s has -o", name)
		}
		// The earlier spellings are kept, hidden, where -o has them.
		for _, old := range []string{"format", "json"} {
			if f := cmd.Flags().Lookup(old); f != nil {
				assert.True(t, f.Hidden, "%s --%s is hidden", name, old)
				assert.NotNil(t, cmd.Flags().Lookup("output"), "%s --%s stands for --output", name, old)
			}
		}
		// No help text names them.
		help := cmd.Long + cmd.Example
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				help += f.Usage
			}
		})
		assert.NotRegexp(t, `--(json|format)\b`, help, name)
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
	for _, want := range []string{"run", "validate", "tools", "tool", "cache stats", "queue stats", "graph"} {
		assert.Contains(t, withOutput, "agentspec "+want)
	}
	// Nor do the README and docs/.
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	for _, page := range append(pages, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "CONTRIBUTING.md")) {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		assert.NotRegexp(t, `--(json|format)\b`, string(data), page)
	}
}

// make demo's build says what it does before it starts, counts the packages
// it compiles (here the main one, relinked with a new stamp), says it goes on
// while one takes long, and shows the go command's errors as errors, not as
// progress.
func TestBuildDemoScript(t *testing.T) {
	t.Parallel()
	// The binary tests' build compiles every package first, so that this
	// one, with other link flags, only links: on an empty build cache two
	// builds at once would compile everything twice.
	agentspecBinary(t)
	bin := filepath.Join(t.TempDir(), "agentspec")
	build := func(goflags string) (string, error) {
		cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "build-demo.sh"))
		// A tick short enough that the link of the main package (seconds)
		// outlasts it: the build says it goes on.
		cmd.Env = append(os.Environ(), "BIN="+bin, "GOFLAGS="+goflags, "BUILD_TICK=0.2")
		out, err := cmd.CombinedOutput() // the script writes only to stderr
		return string(out), err
	}
	out, err := build(fmt.Sprintf("-ldflags=-X=main.buildDemoTest=%d", time.Now().UnixNano()))
	require.NoError(t, err, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.True(t, strings.HasPrefix(lines[0], "building "+bin+" (the first build downloads and compiles the dependencies and takes a few minutes"), lines[0])
	assert.Regexp(t, `(?m)^  compiled [0-9]+ of at most [0-9]+: github.com/agentspec/agentspec/cmd/agentspec$`, out)
	assert.Regexp(t, `(?m)^  still compiling \([0-9]+ of at most [0-9]+ packages done, [0-9]+s so far\)$`, out)
	assert.Equal(t, "built "+bin, lines[len(lines)-1])
	version, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.Contains(t, string(version), "agentspec")

	out, err = build("-ldflags=-no-such-flag")
	require.Error(t, err, "a failed build fails the script")
	assert.Contains(t, out, "\nflag provided but not defined: -no-such-flag\n", "the linker's error as it printed it")
	assert.Contains(t, out, "\n# github.com/agentspec/agentspec/cmd/agentspec\n", "the go command's heading as it printed it")
	assert.NotRegexp(t, `compiled [0-9]+ of at most [0-9]+: .*( |#)`, out, "an error is not counted as a package")
	assert.NotContains(t, out, "built ")
}

// A line the go command writes in two parts, with a tick between them, is
// shown whole, and so is a last line without a newline: the build-demo
// script's read, cut short by the tick, keeps what it had read.
func TestBuildDemoScriptKeepsALineTheTickCut(t *testing.T) {
	t.Parallel()
	fake := t.TempDir()
	goScript := "#!/bin/sh\n" +
		"if [ \"$1\" = list ]; then echo a; echo b; exit 0; fi\n" +
		"printf 'example.com/pkg\\n# exam'; sleep 1; printf 'ple.com/pkg\\nlast words'; exit 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(fake, "go"), []byte(goScript), 0o755))
	cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "build-demo.sh"))
	cmd.Env = append(os.Environ(), "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BIN="+filepath.Join(t.TempDir(), "agentspec"), "BUILD_TICK=0.3")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a failed build fails the script")
	assert.Contains(t, string(out), "\n  compiled 1 of at most 2: example.com/pkg\n")
	assert.Contains(t, string(out), "\n# example.com/pkg\n", "the heading, whole")
	assert.Regexp(t, `(?m)^  still compiling \(1 of at most 2 packages done, [0-9]+s so far\)$`, string(out))
	assert.True(t, strings.HasSuffix(string(out), "\nlast words\n"), "%q", out)
}

// CONTRIBUTING.md's diagram matches the folders: every folder of Go code is
// in it (by its path, or by its name under a folder that is), and every
// path it names exists.
func TestContributingDiagramMatchesTheFolders(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "CONTRIBUTING.md"))
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, "```text\n")
	require.NotEqual(t, -1, start, "CONTRIBUTING.md has its diagram in a text block")
	diagram := doc[start+len("```text\n"):]
	diagram = diagram[:strings.Index(diagram, "```")]
	names := func(word string) bool {
		return regexp.MustCompile(`(^|[\s(,])` + regexp.QuoteMeta(word) + `(/|\b)`).MatchString(diagram)
	}

	var folders []string
	require.NoError(t, filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, err := filepath.Rel(repoRoot, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel != "." && !slices.Contains(folders, filepath.ToSlash(rel)) {
				folders = append(folders, filepath.ToSlash(rel))
			}
		}
		return nil
	}))
	require.NotEmpty(t, folders)
	var covered func(folder string) bool
	covered = func(folder string) bool {
		if names(folder) {
			return true
		}
		parent, base := pathpkg.Split(folder)
		parent = strings.TrimSuffix(parent, "/")
		if parent == "internal" && folder != "internal" { // internal/x is named whole
			return false
		}
		return parent != "" && names(base) && (covered(parent) || strings.HasSuffix(parent, "/internal") && covered(strings.TrimSuffix(parent, "/internal")))
	}
	for _, folder := range folders {
		assert.True(t, covered(folder), "CONTRIBUTING.md's diagram does not name %s", folder)
	}

	// Every path it names is there.
	for _, m := range regexp.MustCompile(`(?m)(?:^|[\s(,])((?:cmd|runtime|capabilities|internal|examples|spec|pipeline|schema|docs|scripts)(?:/[a-z0-9-]+)+)`).FindAllStringSubmatch(diagram, -1) {
		st, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(m[1])))
		if assert.NoError(t, err, "the diagram names %s", m[1]) {
			assert.True(t, st.IsDir(), "%s is a folder", m[1])
		}
	}
}

// Every command's long help reads in a terminal 100 columns wide: its prose
// is wrapped by hand, and an edit that leaves a long line shows here.
func TestLongHelpFitsATerminal(t *testing.T) {
	var walk func(*cobra.Command)
	checked := 0
	walk = func(cmd *cobra.Command) {
		for i, line := range strings.Split(cmd.Long, "\n") {
			checked++
			assert.LessOrEqual(t, utf8.RuneCountInString(line), 100,
				"%s --help, line %d of its description: %q", cmd.CommandPath(), i+1, line)
		}
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(newRootCmd())
	assert.Greater(t, checked, 100, "the commands' descriptions were read")
}

// docs/dependencies.md names every module go.mod requires directly, with
// why: a module the code starts importing is named there in the same
// change. A submodule counts as named when its module's row names the rest
// of its path (aws-sdk-go-v2's `config`, `service/bedrockruntime`).
func TestDependenciesAreNamed(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "dependencies.md"))
	require.NoError(t, err)
	var direct []string
	for _, line := range strings.Split(string(mod), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 2 && strings.Contains(fields[0], ".") && !strings.Contains(line, "// indirect") {
			direct = append(direct, fields[0])
		}
	}
	require.NotEmpty(t, direct)
	named := func(m string) bool {
		if strings.Contains(string(doc), "`"+m+"`") {
			return true
		}
		for p := pathpkg.Dir(m); p != "." && strings.Contains(p, "/"); p = pathpkg.Dir(p) {
			if strings.Contains(string(doc), "`"+p+"`") && strings.Contains(string(doc), strings.TrimPrefix(m, p+"/")) {
				return true
			}
		}
		return false
	}
	for _, m := range direct {
		assert.True(t, named(m), "docs/dependencies.md does not name %s", m)
	}
}

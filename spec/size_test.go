package spec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/expansion"
)

// maxLoadAlloc is what loading one of the files below may allocate. Each
// expands to 100 MB or more when nothing bounds it.
const maxLoadAlloc = 64 << 20

// allocated returns the error of loading src as file and how many bytes the
// load allocated. The tests calling it are not parallel, so that nothing else
// allocates meanwhile: parallel tests wait for the sequential ones to end.
func allocated(t *testing.T, file, src string) (error, uint64) {
	t.Helper()
	l := testLoader(t)
	_, _ = l.Load("warm.yaml", []byte("model: test\n")) // compile the schemas first
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := l.Load(file, []byte(src))
	runtime.ReadMemStats(&after)
	return err, after.TotalAlloc - before.TotalAlloc
}

// at returns the text of src at the 1-based line and column (characters).
func at(src string, line, col int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	r := []rune(lines[line-1])
	if col < 1 || col > len(r) {
		return ""
	}
	return string(r[col-1:])
}

// The files are small; what they expand to is not. The bound is on bytes,
// not values: a few thousand values can hold hundreds of megabytes.
func TestExpansionIsBoundedBySize(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	key := strings.Repeat("k", 1000)
	var nested strings.Builder // each level two aliases of the one below
	fmt.Fprintf(&nested, "model: test\nmetadata:\n  a0: &a0 {%s0: x, %s1: y}\n", key, key)
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&nested, "  a%d: &a%d {%sa: *a%d, %sb: *a%d}\n", i, i, key, i-1, key, i-1)
	}
	tests := []struct {
		name, src string
	}{{
		name: "a long string aliased in a list aliased in a list",
		src: "model: test\nmetadata:\n  s: &s " + long + "\n  l: &l [" + strings.Repeat("*s, ", 99) + "*s]\n" +
			"  m: [" + strings.Repeat("*l, ", 9) + "*l]\n",
	}, {
		name: "long keys nested through aliases",
		src:  nested.String(),
	}, {
		name: "a long string merged into many mappings",
		src: "model: test\nmetadata:\n  base: &base {text: " + long + "}\n  all: &all [" +
			strings.Repeat("{<<: *base}, ", 99) + "{<<: *base}]\n  more: [" + strings.Repeat("*all, ", 9) + "*all]\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err, alloc := allocated(t, "agent.yaml", tc.src)
			t.Logf("%d bytes allocated", alloc)
			assert.Less(t, alloc, uint64(maxLoadAlloc), "bytes allocated")
			require.Error(t, err)
			var errs Errors
			require.True(t, errors.As(err, &errs), err.Error())
			require.Len(t, errs, 1, err.Error())
			e := errs[0]
			t.Log(e)
			assert.Contains(t, e.Msg, "expands to too much: the spec holds more than 2 MB of text and key paths, the most a spec file of "+
				expansion.ByteSize(len(tc.src))+" may grow to (10 times its size, at least 2 MB, at most 16 MB); are YAML aliases nested in each other?")
			// It is reported at the alias that takes the document past the
			// bound, which the message names.
			alias, _, _ := strings.Cut(strings.TrimPrefix(e.Msg[strings.Index(e.Msg, "alias *"):], "alias "), " ")
			assert.True(t, strings.HasPrefix(at(tc.src, e.Pos.Line, e.Pos.Col), alias),
				"%s is not at %d:%d: %q", alias, e.Pos.Line, e.Pos.Col, at(tc.src, e.Pos.Line, e.Pos.Col))
		})
	}
}

// Paths of long keys nested deeply are quadratic in the file's size,
// aliases or not.
func TestLongPathsAreBoundedBySize(t *testing.T) {
	key := strings.Repeat("k", 1000)
	var open strings.Builder
	for i := range 600 {
		fmt.Fprintf(&open, `{"%s%d": `, key, i)
	}
	doc := `{"model": "test", "metadata": ` + open.String() + "1" + strings.Repeat("}", 601)
	for _, file := range []string{"agent.json", "agent.yaml"} {
		t.Run(file, func(t *testing.T) {
			err, alloc := allocated(t, file, doc)
			t.Logf("%d bytes allocated", alloc)
			assert.Less(t, alloc, uint64(maxLoadAlloc), "bytes allocated")
			require.Error(t, err)
			var errs Errors
			require.True(t, errors.As(err, &errs), err.Error())
			require.Len(t, errs, 1, err.Error())
			limit := expansion.ByteSize(expansion.Factor * len(doc))
			assert.Contains(t, errs[0].Msg, "the spec holds more than "+limit+" of text and key paths, the most a spec file of "+expansion.ByteSize(len(doc))+" may grow to")
			assert.True(t, strings.HasPrefix(at(doc, errs[0].Pos.Line, errs[0].Pos.Col), `{"`+key) ||
				strings.HasPrefix(at(doc, errs[0].Pos.Line, errs[0].Pos.Col), "1"), "reported at a value")
		})
	}
}

func TestDeepNestingIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, src, want string
	}{
		{"YAML flow lists beyond yaml.v3's bound", "agent.yaml", "metadata: " + strings.Repeat("[", 100_000), "exceeded max depth of 10000"},
		{"YAML flow mappings beyond yaml.v3's bound", "agent.yaml", "metadata: " + strings.Repeat("{a: ", 100_000), "exceeded max depth of 10000"},
		{"YAML within yaml.v3's bound", "agent.yaml", "metadata:\n  a: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000), "nested more than 1000 levels deep"},
		{"JSON beyond encoding/json's bound", "agent.json", `{"metadata": ` + strings.Repeat("[", 100_000), "exceeded max depth"},
		{"JSON within encoding/json's bound", "agent.json", `{"metadata": ` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "}", "nested more than 1000 levels deep"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := testLoader(t).Load(tc.file, []byte(tc.src))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Len(t, strings.Split(err.Error(), "\n"), 1, "one problem: %s", err)
		})
	}
}

func TestLegitAliasesLoad(t *testing.T) {
	t.Parallel()
	// A long string used a few times, as a shared prompt would be.
	prompt := strings.Repeat("Be brief. ", 20_000)
	src := "metadata:\n  prompt: &p " + prompt + "\n  again: [*p, *p, *p]\ninstructions: *p\nmodel: test\n"
	s, err := testLoader(t).Load("agent.yaml", []byte(src))
	require.NoError(t, err)
	require.Len(t, s.Instructions, 1)
	assert.Len(t, s.Instructions[0], len(strings.TrimSpace(prompt)))
}

func TestOffsetPos(t *testing.T) {
	t.Parallel()
	src := "ab\ncé\n\nxyz"
	d := newDocument("f", []byte(src))
	// Forwards, backwards and again: each answer is the one counted afresh.
	for _, off := range []int{0, 1, 3, 4, 6, 7, 8, 9, 2, 0, len(src), 6, 6} {
		line := 1 + strings.Count(src[:off], "\n")
		col := 1 + len([]rune(src[strings.LastIndexByte(src[:off], '\n')+1:off]))
		assert.Equal(t, Position{File: "f", Line: line, Col: col}, d.offsetPos(off), "offset %d", off)
	}
}

// A duplicate key is reported with every use of an aliased mapping holding
// it, and adds no value: its messages count towards the size all the same.
func TestDuplicateKeysAreBoundedBySize(t *testing.T) {
	src := "model: test\nmetadata:\n  d: &d {" + strings.Repeat("a: 1, ", 2000) + "a: 1}\n" +
		"  l: &l [" + strings.Repeat("*d, ", 99) + "*d]\n  m: [" + strings.Repeat("*l, ", 4) + "*l]\n"
	err, alloc := allocated(t, "agent.yaml", src)
	t.Logf("%d bytes allocated", alloc)
	assert.Less(t, alloc, uint64(maxLoadAlloc), "bytes allocated")
	require.Error(t, err)
	var errs Errors
	require.True(t, errors.As(err, &errs), err.Error())
	var cut []*Error
	for _, e := range errs {
		if strings.Contains(e.Msg, "expands to too much") {
			cut = append(cut, e)
		}
	}
	require.Len(t, cut, 1, "the size is reported once")
	assert.True(t, strings.HasPrefix(at(src, cut[0].Pos.Line, cut[0].Pos.Col), "*d"), "at an alias of the mapping")
	assert.Less(t, len(errs), 100_000, "duplicates reported")
}

func TestLongLabelsAreCut(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("k", 300)
	src := "metadata:\n  " + key + ":\n    " + key + "e:\n      " + key + "n: 1\n      b: !foo 1\n"
	_, err := testLoader(t).Load("agent.yaml", []byte(src))
	require.Error(t, err)
	var errs Errors
	require.True(t, errors.As(err, &errs))
	require.Len(t, errs, 1)
	label, msg, _ := strings.Cut(errs[0].Msg, ": ")
	assert.LessOrEqual(t, len([]rune(label)), maxLabel)
	assert.True(t, strings.HasPrefix(label, "metadata.kkk") && strings.HasSuffix(label, "kkke.b"), label)
	assert.Equal(t, "unsupported YAML tag !foo; remove it, or quote the value", msg)
}

// References nested in defaults take time and memory in proportion to the
// file, however deep they go: each default's text was scanned and copied
// again at each level, so that a file of 180 kB took seconds and hundreds of
// megabytes to load.
func TestNestedDefaultsAreLinear(t *testing.T) {
	const depth = 20_000
	src := "model: test\nname: " + strings.Repeat("${NOPE:-a", depth) + strings.Repeat("}", depth) + "\n"
	err, alloc := allocated(t, "agent.yaml", src)
	t.Logf("%d bytes allocated", alloc)
	assert.Less(t, alloc, uint64(maxLoadAlloc), "bytes allocated")
	require.NoError(t, err)
	s, err := testLoader(t).Load("agent.yaml", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("a", depth), s.Name)
}

// aliasBomb is a spec whose metadata holds levels of aliases, each of
// width uses of the level below, the first level a list of width values:
// width^levels values in a file of a few hundred bytes.
func aliasBomb(levels, width int) string {
	var b strings.Builder
	b.WriteString("model: test\nmetadata:\n  l0: &l0 [" + strings.TrimSuffix(strings.Repeat("lol, ", width), ", ") + "]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), width), ", "))
	}
	return b.String()
}

// mergeBomb is a spec whose metadata holds a mapping of keys members,
// merged width times into a mapping, which is merged width times into
// another, levels deep: every merge but the first of each repeats keys
// already there.
func mergeBomb(keys, width, levels int) string {
	var b strings.Builder
	b.WriteString("model: test\nmetadata:\n  m0: &m0 {")
	for i := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "k%d: 1", i)
	}
	b.WriteString("}\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  m%d: &m%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), width), ", "))
	}
	return b.String()
}

// A file whose aliases nested in each other expand to far more values
// than a spec may hold ("billion laughs"), through lists or merge keys, is
// refused before any of it is converted, at the alias whose expansion
// passes the bound: what it would expand to is counted, not built. A merge
// that repeats keys already present counts them too, though it adds none
// of them: it costs their walk all the same.
func TestAliasBombsAreRefusedBeforeConversion(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"lists":       aliasBomb(9, 9),
		"merges":      mergeBomb(300, 100, 3),
		"wide merges": mergeBomb(3000, 30, 2),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			d := parseYAML("agent.yaml", []byte(src), func(string) (string, bool) { return "", false })
			t.Logf("%d bytes refused in %s", len(src), time.Since(start))
			assert.Nil(t, d.root, "nothing is converted")
			assert.Zero(t, len(d.values), "values recorded")
			err := d.errors()
			var errs Errors
			require.True(t, errors.As(err, &errs), "%v", err)
			require.Len(t, errs, 1, err.Error())
			e := errs[0]
			t.Log(e)
			assert.Regexp(t, `^metadata\.[lm]\d(\[\d+\])?: alias \*[lm]\d expands to too much: the spec (expands to more than 100000 values|holds more than)`, e.Msg)
			alias, _, _ := strings.Cut(strings.TrimPrefix(e.Msg[strings.Index(e.Msg, "alias *"):], "alias "), " ")
			assert.True(t, strings.HasPrefix(at(src, e.Pos.Line, e.Pos.Col), alias),
				"%s is not at %d:%d: %q", alias, e.Pos.Line, e.Pos.Col, at(src, e.Pos.Line, e.Pos.Col))
		})
	}
}

// A spec file larger than a spec may grow to is refused for its size, by
// the file's name, before it is read: the size bound is no alias's doing,
// and a file of gigabytes would otherwise be read whole into memory first.
func TestLoadFileTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	// A sparse file: nothing is written, and reading it would read zeros.
	require.NoError(t, os.WriteFile(path, []byte("model: test\n# "), 0o644))
	require.NoError(t, os.Truncate(path, 20_000_000))
	_, err := testLoader(t).LoadFile(path)
	require.Error(t, err)
	var errs Errors
	require.True(t, errors.As(err, &errs), err.Error())
	require.Len(t, errs, 1, err.Error())
	assert.Equal(t, path+": the file is 20 MB (20000000 bytes), larger than the 16 MB (16000000 bytes) a spec file may be", err.Error())

	// One that says nothing of its size is read up to the bound only.
	_, err = ReadSpec("<stdin>", io.MultiReader(strings.NewReader("model: test\n# "), zeros{}))
	assert.EqualError(t, err, "<stdin>: the spec is larger than the 16 MB (16000000 bytes) a spec file may be")
	data, err := ReadSpec("<stdin>", strings.NewReader("model: test\n"))
	require.NoError(t, err)
	assert.Equal(t, "model: test\n", string(data))
}

// zeros reads as an endless run of zero bytes, as /dev/zero does.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

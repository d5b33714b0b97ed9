package pipeline

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A step's when is compiled when the pipeline loads and evaluated over the
// values of its references, as their schemas type them.
func TestConditionEval(t *testing.T) {
	t.Parallel()
	p, err := LoadFile(filepath.Join("testdata", "review-fix", "pipeline.yaml"))
	require.NoError(t, err)
	review := p.Step("review")
	require.NotNil(t, review.Condition)
	require.Len(t, review.Condition.Refs(), 1)
	assert.Equal(t, "triage", review.Condition.Refs()[0].Name)

	var files any
	require.NoError(t, json.Unmarshal([]byte(`[{"path": "a.go", "problem": "crash"}]`), &files))
	ok, err := review.Condition.Eval([]any{files})
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = review.Condition.Eval([]any{[]any{}})
	require.NoError(t, err)
	assert.False(t, ok, "no files: nothing to review")
	_, err = review.Condition.Eval(nil)
	assert.Error(t, err)
	assert.Nil(t, p.Step("triage").Condition, "a step without when always runs")
}

// Numbers reach CEL as the schema types them: an integer property compares
// with integer literals, whether it arrives as 3 or 3.0. count is optional:
// it is tested first, and absent it is null.
func TestConditionNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value any
		want  bool
	}{{float64(3), true}, {json.Number("3"), true}, {float64(1), false}, {nil, false}} {
		ok, err := compileAndEval(t, "{{steps.t.output.count}} != null && {{steps.t.output.count}} >= 2", tc.value)
		require.NoError(t, err)
		assert.Equal(t, tc.want, ok, "%v", tc.value)
	}
}

func compileAndEval(t *testing.T, when string, value any) (bool, error) {
	t.Helper()
	dir := t.TempDir()
	writeAgents(t, dir)
	src := "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"" + when + "\"\n"
	p, err := Load(filepath.Join(dir, "p.yaml"), []byte(src))
	if err != nil {
		return false, err
	}
	c := p.Step("a").Condition
	values := make([]any, len(c.Refs()))
	for i := range values {
		values[i] = value
	}
	return c.Eval(values)
}

// A value that may be absent is null then: a when may compare it and ask
// has() of it anywhere, and use it otherwise only where it has tested it.
// count is optional in triage's output_schema, files too.
func TestConditionOptionalValues(t *testing.T) {
	t.Parallel()
	const (
		count = "{{steps.t.output.count}}"
		files = "{{steps.t.output.files}}"
	)
	for _, tc := range []struct {
		when string
		ok   bool
	}{
		{count + " > 2", false},
		{count + " + 1 == 3", false},
		{"size(" + files + ") > 0", false},
		{count + " > 2 || " + count + " != null", false},
		{count + " != null || " + count + " > 2", false},
		{"true && " + count + " > 2", false},
		{files + " != null && size({{steps.t.output.files[0].path}}) > 0", false}, // a test names the very reference
		{files + " != null && " + files + ".exists(f, f.path == 'a.go')", false},  // an item's path, a member of it

		{count + " != null && " + count + " > 2", true},
		{count + " > 2 && " + count + " != null", true}, // && ignores the error when the other side is false
		{"null != " + count + " && " + count + " > 2", true},
		{count + " == null || " + count + " > 2", true},
		{"!(" + count + " == null) && " + count + " > 2", true},
		{count + " != null ? " + count + " > 2 : false", true},
		{count + " == 3 && " + count + " > 2", true},
		{"has({{steps.t.output}}.count) && " + count + " > 2", true},
		{count + " == 3", true},
		{count + " in [1, 2]", true},
		{files + " != []", true},
		{files + " != null && size(" + files + ") > 0", true},
		{files + " != null && " + files + ".exists(f, has(f.path) && f.path == 'a.go')", true},
	} {
		_, err := compileAndEval(t, tc.when, nil)
		if tc.ok {
			assert.NoError(t, err, tc.when)
			continue
		}
		assert.ErrorContains(t, err, "may be absent (t's output_schema does not require", tc.when)
	}
}

// One reference written twice in a when is one value.
func TestConditionRepeatedReference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value any
		want  bool
	}{{nil, true}, {float64(1), false}, {float64(3), true}} {
		ok, err := compileAndEval(t, "{{steps.t.output.count}} == null || {{steps.t.output.count}} > 2 && {{steps.t.output.count}} < 5", tc.value)
		require.NoError(t, err, "%v", tc.value)
		assert.Equal(t, tc.want, ok, "%v", tc.value)
	}
}

// An integer beyond float64's exact range (2^53) keeps its digits: it reaches
// CEL as an int64 and compares as the integer it is.
func TestConditionLargeIntegers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		when  string
		value any
		want  bool
	}{
		{"{{steps.t.output.count}} == 9007199254740993", json.Number("9007199254740993"), true},
		{"{{steps.t.output.count}} == 9007199254740992", json.Number("9007199254740993"), false},
		{"{{steps.t.output.count}} > 9007199254740992", json.Number("9007199254740993"), true},
		{"{{steps.t.output.count}} == 9223372036854775807", json.Number("9223372036854775807"), true},
		{"{{steps.t.output.count}} == -9223372036854775808", json.Number("-9223372036854775808"), true},
		{"{{steps.t.output.count}} == 3", json.Number("3.0"), true},
		{"has({{steps.t.output}}.count) && {{steps.t.output}}.count == 9007199254740993", map[string]any{"count": json.Number("9007199254740993")}, true}, // a member of a map
		{"has({{steps.t.output}}.count) && {{steps.t.output}}.count == 9007199254740992", map[string]any{"count": json.Number("9007199254740993")}, false},
	} {
		ok, err := compileAndEval(t, "{{steps.t.output.count}} != null && "+tc.when, tc.value)
		if !strings.Contains(tc.when, ".count}}") {
			ok, err = compileAndEval(t, tc.when, tc.value)
		}
		require.NoError(t, err, tc.when)
		assert.Equal(t, tc.want, ok, tc.when)
	}
}

// A number (a double to CEL) orders against an integer and the other way
// round, as CEL's cross-type numeric comparisons allow: a score of type
// number is compared with 7, not only with 7.0.
func TestConditionMixedNumbers(t *testing.T) {
	t.Parallel()
	src := "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema: {type: object, properties: {score: {type: number}, n: {type: integer}}, required: [score, n]}\n" +
		"  a:\n    spec: {model: test}\n    when: \"{{steps.t.output.score}} >= 7 && {{steps.t.output.n}} < {{steps.t.output.score}}\"\n"
	p, err := Load("p.yaml", []byte(src))
	require.NoError(t, err)
	for _, tc := range []struct {
		score any
		want  bool
	}{{json.Number("7.5"), true}, {json.Number("7"), true}, {json.Number("6.9"), false}} {
		ok, err := p.Step("a").Condition.Eval([]any{tc.score, json.Number("2")})
		require.NoError(t, err)
		assert.Equal(t, tc.want, ok, tc.score)
	}
}

// A member a when reaches inside an object value ({{steps.t.output}}.score)
// is typed by its property's schema, as a reference to it is: a number that
// happens to be whole is a double, so score / 2.0 works whatever the score,
// and an integer member stays an integer.
func TestConditionNumbersInObjects(t *testing.T) {
	t.Parallel()
	src := "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema:\n        type: object\n        properties:\n" +
		"          score: {type: number}\n          n: {type: integer}\n" +
		"          sub: {type: object, properties: {score: {type: number}}, required: [score]}\n" +
		"          list: {type: array, items: {type: object, properties: {score: {type: number}}, required: [score]}}\n" +
		"        required: [score, n, sub, list]\n" +
		"  a:\n    spec: {model: test}\n    when: \"{{steps.t.output}}.score / 2.0 > 3.4 && {{steps.t.output}}.n / 2 == 3" +
		" && {{steps.t.output}}.sub.score / 2.0 > 3.4 && {{steps.t.output}}.list[0].score / 2.0 > 3.4\"\n"
	p, err := Load("p.yaml", []byte(src))
	require.NoError(t, err)
	for _, score := range []any{json.Number("7"), json.Number("7.0"), json.Number("7.5"), float64(7)} {
		out := map[string]any{"score": score, "n": json.Number("7"),
			"sub": map[string]any{"score": score}, "list": []any{map[string]any{"score": score}}}
		ok, err := p.Step("a").Condition.Eval([]any{out})
		require.NoError(t, err, "%v", score)
		assert.True(t, ok, "%v", score)
	}
}

// A member a when takes from an object is checked against the object's
// schema only where the schema lists its members: an object that lists
// none, additionalProperties and an untyped value take any, and has()
// and comprehensions see the same types.
func TestConditionMembersTheSchemaAllows(t *testing.T) {
	t.Parallel()
	src := "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema:\n        type: object\n        properties:\n" +
		"          files: {type: array, items: {type: object, properties: {p: {type: string}}, required: [p]}}\n" +
		"          m: {type: object, additionalProperties: {type: object, properties: {z: {type: integer}}}}\n" +
		"          open: {type: object}\n          any: {}\n          n: {type: integer}\n" +
		"        required: [files, m, open, any, n]\n" +
		"  a:\n    spec: {model: test}\n    when: \"{{steps.t.output}}.files[0].p == 'x' && {{steps.t.output}}['n'] > 0" +
		" && has({{steps.t.output}}.m.anything) && has({{steps.t.output}}.m.anything.z) && {{steps.t.output}}.m.anything.z > 1" +
		" && has({{steps.t.output}}.open.whatever) && {{steps.t.output}}.open.whatever == 1 && {{steps.t.output}}.any.x.y == 2" +
		" && {{steps.t.output.files}}.exists(f, has(f.p) && f.p != '') && {{steps.t.output.files}}.map(f, f.p).exists(p, p != '')\"\n"
	p, err := Load("p.yaml", []byte(src))
	require.NoError(t, err)
	require.NotNil(t, p.Step("a").Condition)
}

// A member a when takes from an object ({{steps.t.output}}.count) that its
// schema does not require is tested before any use, as a reference to it is:
// absent, it is no key of the map, and even comparing it fails. has(), an
// in test or a test of the reference to the same value guards it; a member
// that may be null is tested as a nullable reference is.
func TestConditionOptionalMembers(t *testing.T) {
	t.Parallel()
	const o = "{{steps.t.output}}"
	src := "inputs:\n  type: object\n  properties:\n" +
		"    opts: {type: object, properties: {depth: {type: integer, default: 1}, level: {type: integer}}, default: {}}\n" +
		"steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema:\n        type: object\n        properties:\n" +
		"          count: {type: integer}\n          name: {type: string}\n          k: {type: [integer, 'null']}\n" +
		"          sub: {type: object, properties: {n: {type: integer}}}\n" +
		"          list: {type: array, items: {type: object, properties: {p: {type: string}}}}\n" +
		"          nl: {type: array, items: {type: [integer, 'null']}}\n" +
		"        required: [name, k, sub, list, nl]\n" +
		"  a:\n    spec: {model: test}\n    when: \"WHEN\"\n"
	assertWhens(t, src, []whenCase{
		{o + ".count > 2", "{{steps.t.output}}.count may be absent (t's output_schema does not require 'count'), and then this when fails: test it first, as has({{steps.t.output}}.count) && ..."},
		{o + ".count == 3", "{{steps.t.output}}.count may be absent"},
		{o + "['count'] > 2", "{{steps.t.output}}['count'] may be absent"},
		{o + ".sub.n > 0", "{{steps.t.output}}.sub.n may be absent (t's output_schema does not require 'n')"},
		{o + ".list.exists(f, f.p == 'a')", "f.p may be absent (t's output_schema does not require 'p'), and then this when fails: test it first, as has(f.p) && ..."},
		{"has(" + o + ".sub) && " + o + ".count > 2", "{{steps.t.output}}.count may be absent"}, // a test names the very member
		{o + ".count > 2 || has(" + o + ".count)", "{{steps.t.output}}.count may be absent"},
		{"has(" + o + ".count) || " + o + ".count > 2", "{{steps.t.output}}.count may be absent"},
		{o + ".k > 2", "{{steps.t.output}}.k may be null (t's output_schema allows null), and then this when fails: test it first, as {{steps.t.output}}.k != null && ..."},
		{"{{inputs.opts}}.level > 0", "{{inputs.opts}}.level may be absent (the pipeline's inputs schema does not require 'level')"},

		{"has(" + o + ".count) && " + o + ".count > 2", ""},
		{o + ".count > 2 && has(" + o + ".count)", ""},
		{"'count' in " + o + " && " + o + "['count'] > 2", ""},
		{"!has(" + o + ".count) || " + o + ".count > 2", ""},
		{"has(" + o + ".count) ? " + o + ".count > 2 : false", ""},
		{"{{steps.t.output.count}} != null && " + o + ".count > 2", ""}, // the reference is the same value
		{"has(" + o + ".sub.n) && " + o + ".sub.n > 0", ""},
		{o + ".list.exists(f, has(f.p) && f.p == 'a')", ""},
		{o + ".name == 'x' && " + o + ".list != []", ""},
		{o + ".k == null || " + o + ".k > 2", ""},
		{o + ".nl.exists(s, s > 2)", "s may be null (t's output_schema allows null)"},
		{o + ".nl.exists(s, s != null && s > 2)", ""},
		{o + ".nl.exists(s, s == 3) && " + o + ".nl.all(s, s == null || s > 2)", ""},
		{o + ".nl.map(s, s).exists(x, x > 2)", "x may be null (t's output_schema allows null)"}, // what map gives is the items' type
		{o + ".list.map(f, f).exists(g, g.p == 'a')", "g.p may be absent (t's output_schema does not require 'p')"},
		{o + ".list.map(f, f).exists(g, has(g.q))", "g.q: t's output_schema has no property 'q'"},
		{o + ".nl.map(s, s).exists(x, x != null && x > 2)", ""},
		{o + ".nl.filter(s, s != null).exists(s, s > 2)", ""},
		{o + ".list.map(f, has(f.p), f.p).exists(p, p == 'a')", ""},
		{o + ".list.map(f, f).exists(g, has(g.p) && g.p == 'a')", ""},
		{"{{inputs.opts}}.depth > 0", ""}, // a default fills it in
	})

	p, err := Load("p.yaml", []byte(strings.Replace(src, "WHEN", "has("+o+".count) && "+o+".count > 2", 1)))
	require.NoError(t, err)
	for _, tc := range []struct {
		out  map[string]any
		want bool
	}{{map[string]any{"name": "x"}, false}, {map[string]any{"count": json.Number("3")}, true}, {map[string]any{"count": json.Number("1")}, false}} {
		ok, err := p.Step("a").Condition.Eval([]any{tc.out})
		require.NoError(t, err, "%v", tc.out)
		assert.Equal(t, tc.want, ok, "%v", tc.out)
	}
}

// A member a when takes from an object is typed by its property's schema
// for CEL's type check too, as a reference is: arithmetic that mixes a
// number (a double) with an integer is refused when the pipeline loads, as
// it would fail when the when is evaluated; what CEL allows loads.
func TestConditionMemberTypes(t *testing.T) {
	t.Parallel()
	const o = "{{steps.t.output}}"
	src := "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema:\n        type: object\n        properties:\n" +
		"          score: {type: number}\n          n: {type: integer}\n          name: {type: string}\n" +
		"          k: {type: [integer, 'null']}\n          any: {}\n" +
		"          list: {type: array, items: {type: object, properties: {score: {type: number}}, required: [score]}}\n" +
		"        required: [score, n, name, k, any, list]\n" +
		"  a:\n    spec: {model: test}\n    when: \"WHEN\"\n"
	assertWhens(t, src, []whenCase{
		{o + ".score + 1 > 2", "found no matching overload for '_+_' applied to '(double, int)'; a number is a double"},
		{"2 * " + o + ".score > 2.0", "found no matching overload for '_*_' applied to '(int, double)'"},
		{o + "['score'] - 1 > 2.0", "applied to '(double, int)'"},
		{o + ".n + " + o + ".score > 2.0", "applied to '(int, double)'"},
		{o + ".score / {{steps.t.output.n}} > 2.0", "applied to '(double, int)'"},
		{o + ".list.exists(f, f.score + 1 > 2.0)", "applied to '(double, int)'"},
		{o + ".score * 2.0 + 1 > 2.0", "applied to '(double, int)'"},
		{"(" + o + ".name + 1) in [1]", "found no matching overload for '_+_' applied to '(string, int)'"},
		{o + ".name > 3", "found no matching overload for '_>_' applied to '(string, int)'"},
		{o + ".list['x'] == 1", "found no matching overload for '_[_]' applied to '(list(map(string, dyn)), string)'"},
		{o + ".name != null", "found no matching overload for '_!=_' applied to '(string, null)'"}, // as {{steps.t.output.name}} != null
		{o + ".list.map(f, f.score).exists(s, s + 1 > 2.0)", "applied to '(double, int)'"},         // what map gives is typed too
		{"{{steps.t.output.list}}.map(f, f.score).exists(s, s + 1 > 2.0)", "applied to '(double, int)'"},
		{o + ".list.map(f, f.score)[0] - 1 > 2.0", "applied to '(double, int)'"},
		{o + ".list.map(f, f.score).filter(s, s > 1).map(s, s * 2).size() > 0", "applied to '(double, int)'"},
		{o + ".list.map(f, true, f.score).exists(s, s + 1 > 2.0)", "applied to '(double, int)'"},

		{o + ".score + 1.0 > 2.0", ""},
		{o + ".score > 2 && " + o + ".score >= 7", ""}, // a number orders against an integer
		{o + ".n + 1 > 2", ""},
		{"int(" + o + ".score) + 1 > 2", ""},
		{o + ".score + double(" + o + ".n) > 2.0", ""},
		{o + ".list.exists(f, f.score + 1.0 > 2.0)", ""},
		{o + ".k != null && " + o + ".k + 1 > 2", ""},
		{o + ".any + 1 > 2", ""}, // its schema says nothing
		{o + ".name.startsWith('a') && size(" + o + ".name) > 1", ""},
		{o + ".list.map(f, f.score).exists(s, s + 1.0 > 2.0 && s > 2)", ""},
		{o + ".list.filter(f, f.score > 1).map(f, f.score).all(s, s * 2.0 > 1.0)", ""},
		{o + ".list.map(f, f.score).map(s, int(s)).exists(i, i + 1 > 2)", ""},
		{o + ".list.map(f, f.score).exists(f, f + 1.0 > 2.0) && " + o + ".list.exists(f, f.score > 1)", ""},
	})
}

// What a filter or a map with a test gives is typed as the items it keeps,
// as what a map gives is: an item that may be null or lack a member is
// refused where it is used untested, unless the test that kept it tested
// it, so the when does not pass validate to fail at run time on a null.
func TestConditionFilteredLists(t *testing.T) {
	t.Parallel()
	const o = "{{steps.t.output}}"
	src := "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema:\n        type: object\n        properties:\n" +
		"          list: {type: array, items: {type: object, properties: {p: {type: string}, n: {type: [integer, 'null']}}, required: [n]}}\n" +
		"          nl: {type: array, items: {type: [integer, 'null']}}\n" +
		"        required: [list, nl]\n" +
		"  a:\n    spec: {model: test}\n    when: \"WHEN\"\n"
	assertWhens(t, src, []whenCase{
		{o + ".nl.filter(s, s != 0).exists(x, x > 2)", "x may be null (t's output_schema allows null)"},
		{o + ".nl.map(s, true, s).exists(x, x > 2)", "x may be null (t's output_schema allows null)"},
		{o + ".nl.map(s, s != 0, s).exists(x, x > 2)", "x may be null (t's output_schema allows null)"},
		{o + ".list.filter(f, true).exists(g, g.p == 'a')", "g.p may be absent (t's output_schema does not require 'p')"},
		{o + ".list.filter(f, has(f.p)).exists(g, g.n > 2)", "g.n may be null (t's output_schema allows null)"},
		{o + ".list.filter(f, true).exists(g, has(g.q))", "g.q: t's output_schema has no property 'q'"},
		{o + ".list.map(f, true, f.n).exists(x, x > 2)", "x may be null (t's output_schema allows null)"},
		{o + ".nl.filter(s, s != null).map(s, s + 1).exists(x, x > 2)", ""},
		{o + ".nl.filter(s, s == null).exists(x, x > 2)", "x may be null (t's output_schema allows null)"},
		{o + ".nl.filter(s, s == null || s > 3).exists(x, x > 2)", "x may be null (t's output_schema allows null)"},

		{o + ".nl.filter(s, s != null).exists(x, x > 2)", ""},
		{o + ".nl.filter(s, s != null && s > 1).exists(x, x > 2)", ""},
		{o + ".nl.map(s, s != null, s).exists(x, x > 2)", ""},
		{o + ".nl.filter(s, s != null).map(s, s).exists(x, x > 2)", ""},
		{o + ".list.filter(f, has(f.p)).exists(g, g.p == 'a')", ""},
		{o + ".list.filter(f, has(f.p) && f.n != null).exists(g, g.p == 'a' && g.n > 2)", ""},
		{o + ".list.filter(f, has(f.p)).map(f, f.p).exists(x, x.startsWith('a'))", ""},
		{o + ".list.map(f, f.n != null, f).exists(g, g.n > 2)", ""},
		{o + ".list.filter(f, f.n != null).filter(g, true).exists(h, h.n > 2)", ""},
	})

	// What loads runs over the nulls it kept out.
	p, err := Load("p.yaml", []byte(strings.Replace(src, "WHEN",
		o+".nl.filter(s, s != null).map(s, s + 1).exists(x, x > 2) && "+o+".list.filter(f, has(f.p)).exists(g, g.p == 'a')", 1)))
	require.NoError(t, err)
	out := map[string]any{"nl": []any{nil, json.Number("2")}, "list": []any{map[string]any{"n": nil}, map[string]any{"p": "a", "n": nil}}}
	ok, err := p.Step("a").Condition.Eval([]any{out})
	require.NoError(t, err)
	assert.True(t, ok)
}

// An item taken by its index from a list a filter made is what the
// filter's test established of each item it kept, as an item a
// comprehension takes from it is: .filter(s, s != null)[0] > 2 loads, as
// it did when such a list was untyped.
func TestConditionFilteredListsIndexed(t *testing.T) {
	t.Parallel()
	const o = "{{steps.t.output}}"
	src := "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema:\n        type: object\n        properties:\n" +
		"          list: {type: array, items: {type: object, properties: {p: {type: string}, n: {type: [integer, 'null']}}, required: [n]}}\n" +
		"          nl: {type: array, items: {type: [integer, 'null']}}\n" +
		"        required: [list, nl]\n" +
		"  a:\n    spec: {model: test}\n    when: \"WHEN\"\n"
	assertWhens(t, src, []whenCase{
		{o + ".nl.filter(s, s != null)[0] > 2", ""},
		{"size(" + o + ".nl.filter(s, s != null)) > 0 && " + o + ".nl.filter(s, s != null)[0] > 2", ""},
		{o + ".nl.map(s, s != null, s)[0] > 2", ""},
		{o + ".list.filter(f, has(f.p))[0].p == 'a'", ""},
		{o + ".list.filter(f, f.n != null)[0].n > 2", ""},

		{o + ".nl.filter(s, s != 0)[0] > 2", "may be null (t's output_schema allows null)"},
		{o + ".list.filter(f, has(f.p))[0].n > 2", "may be null (t's output_schema allows null)"},
		{o + ".list.filter(f, f.n != null)[0].p == 'a'", "may be absent (t's output_schema does not require 'p')"},
	})
}

// A list of the lists a filter made (.map(l, l.filter(s, s != null))) has
// items whose items are what the filter's test established, as the list
// a filter made has: its items' items may be used as such, as they were
// when such a list was untyped.
func TestConditionListsOfFilteredLists(t *testing.T) {
	t.Parallel()
	const o = "{{steps.t.output}}"
	src := "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
		"      output_schema:\n        type: object\n        properties:\n" +
		"          ll: {type: array, items: {type: array, items: {type: [integer, 'null']}}}\n" +
		"        required: [ll]\n" +
		"  a:\n    spec: {model: test}\n    when: \"WHEN\"\n"
	assertWhens(t, src, []whenCase{
		{o + ".ll.map(l, l.filter(s, s != null)).exists(l, l.exists(x, x > 2))", ""},
		{o + ".ll.map(l, l.filter(s, s != null)).exists(l, l[0] > 2)", ""},
		{o + ".ll.map(l, l.filter(s, s != null)).filter(l, size(l) > 0).exists(l, l.exists(x, x > 2))", ""},
		{o + ".ll.map(l, l.filter(s, s != null))[0].exists(x, x > 2)", ""},

		{o + ".ll.map(l, l.filter(s, s != 0)).exists(l, l.exists(x, x > 2))", "x may be null (t's output_schema allows null)"},
		{o + ".ll.map(l, l).exists(l, l.exists(x, x > 2))", "x may be null (t's output_schema allows null)"},
	})
}

// whenCase is a when written in place of WHEN in a pipeline, and what its
// load says: the error's text, or "" when it loads.
type whenCase struct {
	when string
	want string
}

// assertWhens loads src with each case's when in place of WHEN.
func assertWhens(t *testing.T, src string, cases []whenCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := Load("p.yaml", []byte(strings.Replace(src, "WHEN", tc.when, 1)))
		if tc.want == "" {
			assert.NoError(t, err, tc.when)
			continue
		}
		assert.ErrorContains(t, err, tc.want, tc.when)
	}
}

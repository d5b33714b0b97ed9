package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/spec"
)

// Every byte of a scalar's value is found where the source writes it,
// through quotes, escapes, folded lines and block indentation: the source
// has that very character there, or the backslash of its escape, or the
// end of the line whose break it is.
func TestScalarPositions(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`w: plain text here`,
		"w: plain text\n  folded over\n\n  lines  \nx: 1",
		`w: 'it''s {{a}} here'`,
		"w: 'single\n   folded  \n\n  twice'",
		`w: "tab\there \"quoted\" \\{{a}} \x41\u00e9\U0001F600 é"`,
		"w: \"double\n  folded \\\n  joined\\n\"",
		`{"w": "json \"x\" \u00e9 {{a}}"}`,
		"w: |\n  first line\n    more indented\n\n  last {{a}}\nx: 1",
		"w: |-\n  no final break\n  é {{a}}\n",
		"w: |2\n    two more\n  base\n",
		"w: >\n  folded\n  into one\n\n  new paragraph\n    spaced\n  back\n",
		"w: >-\n  a\n  b\n",
		"  - when: >+\n      kept\n\n\n    next: 1\n",
	} {
		var root yaml.Node
		require.NoError(t, yaml.Unmarshal([]byte(src), &root), src)
		node := scalarAt(&root)
		require.NotNil(t, node, src)
		lines := strings.Split(src, "\n")
		line := func(n int) string {
			if n < 1 || n > len(lines) {
				return ""
			}
			return lines[n-1]
		}
		at := scalarPositions(line, spec.Position{File: "p.yaml", Line: node.Line, Col: node.Column}, node.Value)
		require.NotNil(t, at, "%q reads as %q", src, node.Value)
		require.Len(t, at, len(node.Value)+1)
		for i := 0; i < len(node.Value); {
			r, size := utf8.DecodeRuneInString(node.Value[i:])
			p := at[i]
			src := line(p.Line)
			j := text.ByteOfColumn(src, p.Col)
			written, _ := utf8.DecodeRuneInString(src[min(j, len(src)):])
			switch {
			case j < len(src) && written == r:
			case j < len(src) && src[j] == '\\':
			case (r == ' ' || r == '\n') && j == len(src):
			default:
				t.Errorf("%q: byte %d, %q, is at %d:%d, where the source has %q", src, i, r, p.Line, p.Col, src[min(j, len(src)):])
			}
			i += size
		}
	}
}

// scalarAt is the scalar under the key w or when, the first one.
func scalarAt(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; (k == "w" || k == "when") && n.Content[i+1].Kind == yaml.ScalarNode {
				return n.Content[i+1]
			}
		}
	}
	for _, c := range n.Content {
		if s := scalarAt(c); s != nil {
			return s
		}
	}
	return nil
}

// A source that does not read as the value (a ${VAR} filled in it) gives
// no positions, rather than wrong ones.
func TestScalarPositionsRefuseAGuess(t *testing.T) {
	t.Parallel()
	line := func(n int) string { return map[int]string{1: `w: "${HOME} > 1"`}[n] }
	assert.Nil(t, scalarPositions(line, spec.Position{Line: 1, Col: 4}, "/root > 1"))
	assert.NotNil(t, scalarPositions(line, spec.Position{Line: 1, Col: 4}, "${HOME} > 1"))
}

// JSON writes a character past U+FFFF as two escapes: one character, at
// the first.
func TestScalarPositionsSurrogatePair(t *testing.T) {
	t.Parallel()
	line := func(n int) string { return map[int]string{1: `{"w": "\ud83d\ude00 > 1"}`}[n] }
	at := scalarPositions(line, spec.Position{Line: 1, Col: 7}, "\U0001F600 > 1")
	require.NotNil(t, at)
	assert.Equal(t, 8, at[0].Col)
	assert.Equal(t, 21, at[5].Col, "the > after the pair")
}

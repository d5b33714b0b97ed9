package suggest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"model", "model", 0},
		{"modle", "model", 1}, // a swap counts once
		{"instructons", "instructions", 1},
		{"rootdir", "root_dir", 1},
		{"kitten", "sitting", 3},
		{"été", "ete", 2},
		{"ca", "abc", 3}, // optimal string alignment, not full Damerau-Levenshtein
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, distance(tc.a, tc.b), "%s/%s", tc.a, tc.b)
		assert.Equal(t, tc.want, distance(tc.b, tc.a), "%s/%s", tc.b, tc.a)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	keys := []string{"model", "model_settings", "max_tool_rounds", "instructions", "name", "allowed_patterns", "denied_patterns"}
	tests := []struct{ word, want string }{
		{"instructons", "instructions"},
		{"modelsettings", "model_settings"},
		{"Model", "model"},
		{"MAX_TOOL_ROUND", "max_tool_rounds"},
		{"nmae", "name"},
		{"allowed", "allowed_patterns"}, // the start of exactly one key
		{"mod", ""},                     // the start of two keys
		{"denied_patern", "denied_patterns"},
		{"colour", ""},
		{"x", ""},
		{"modl", "model"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Closest(tc.word, keys), tc.word)
	}
	assert.Equal(t, ` (did you mean "name"?)`, DidYouMean("nme", keys))
	assert.Equal(t, "", DidYouMean("zzz", keys))
}

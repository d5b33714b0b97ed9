// Package suggest finds the word a misspelt one most likely meant, for the
// "did you mean" hints of every agentspec error message.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidate s most likely misspells, or "" when none is
// close. Closeness is the optimal-string-alignment distance (Levenshtein plus
// transpositions) ignoring case, within a third of the word's length; failing
// that, a word that starts exactly one candidate ("allowed" for
// "allowed_patterns") suggests it.
func Closest(s string, candidates []string) string {
	word := strings.ToLower(s)
	limit := max(1, min(3, len([]rune(word))/3))
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if c == s {
			continue
		}
		if d := distance(word, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" || len(word) < 3 {
		return best
	}
	for _, c := range candidates {
		if strings.HasPrefix(strings.ToLower(c), word) {
			if best != "" {
				return "" // ambiguous
			}
			best = c
		}
	}
	return best
}

// DidYouMean returns ` (did you mean "x"?)` for the closest candidate, or "".
func DidYouMean(s string, candidates []string) string {
	if c := Closest(s, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// distance is the optimal string alignment distance between a and b: the
// fewest insertions, deletions, substitutions and swaps of adjacent runes
// turning one into the other.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rolling rows: the one before last is needed for transpositions.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

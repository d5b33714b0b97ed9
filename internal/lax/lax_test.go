package lax

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInteger(t *testing.T) {
	for s, want := range map[string]json.Number{
		"3": "3", " 3 ": "3", "+3": "3", "-3": "-3", "1_000": "1000", "3.0": "3", "3.": "3",
		"007": "7", "-0": "0", "0.000": "0",
	} {
		got, ok := Integer(s)
		assert.True(t, ok, "%q", s)
		assert.Equal(t, want, got, "%q", s)
	}
	for _, s := range []string{"", " ", "three", "2.5", "1e3", "inf", "--3", "3-", "0x10", ".5"} {
		_, ok := Integer(s)
		assert.False(t, ok, "%q", s)
	}
}

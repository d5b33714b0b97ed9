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

// TestBool: the values pydantic v2 reads as a bool in lax mode, as its
// conversion table and its Booleans page list them (true and false, the
// numbers 0 and 1, 0.0 and 1.0 too, and the strings '0', 'off', 'f',
// 'false', 'n', 'no', '1', 'on', 't', 'true', 'y', 'yes' in any case), and
// nothing else: no other number, no spaces around a word.
func TestBool(t *testing.T) {
	for v, want := range map[any]bool{
		true: true, false: false,
		"0": false, "off": false, "f": false, "false": false, "n": false, "no": false,
		"1": true, "on": true, "t": true, "true": true, "y": true, "yes": true,
		"False": false, "FALSE": false, "Off": false, "NO": false, "N": false, "F": false,
		"True": true, "TRUE": true, "On": true, "YES": true, "Y": true, "T": true, "yEs": true,
		json.Number("0"): false, json.Number("1"): true, json.Number("0.0"): false, json.Number("1.0"): true,
		json.Number("-0"): false, json.Number("1e0"): true,
		0: false, 1: true, 0.0: false, 1.0: true, int64(1): true,
	} {
		got, ok := Bool(v)
		assert.True(t, ok, "%#v", v)
		assert.Equal(t, want, got, "%#v", v)
	}
	for _, v := range []any{
		"", " ", " yes", "true ", "yess", "ye", "maybe", "2", "-1", "0.0", "1.0", "01", "+1", "nope", "null", "none",
		json.Number("2"), json.Number("-1"), json.Number("0.5"), json.Number("1.5"),
		2, -1, 0.5, nil, []any{true}, map[string]any{},
	} {
		_, ok := Bool(v)
		assert.False(t, ok, "%#v", v)
	}
}

package cache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CanonicalJSON encodes v as canonical JSON: object keys sorted, no
// insignificant white space, no HTML escaping, and every number written in one
// normal form (1, 1.0, 10e-1 and 1E0 all become 1), so that two encodings of
// the same document give the same bytes. v is anything encoding/json can
// marshal; pass JSON text as a json.RawMessage.
//
// Numbers are normalised exactly, on their decimal digits, never through a
// float64: integers of any size keep every digit.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, doc); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case string:
		writeString(buf, v)
	case json.Number:
		n, err := canonicalNumber(string(v))
		if err != nil {
			return err
		}
		buf.WriteString(n)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, v[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		// The decoder above produces only the types handled here.
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

// writeString writes s as a JSON string the way encoding/json does, except
// that <, > and & stay as they are: the bytes are hashed, not embedded in HTML.
func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	buf.Truncate(buf.Len() - 1) // Encode's trailing newline
}

// canonicalNumber rewrites a JSON number in one normal form. The value is
// taken apart into its significant digits and a decimal exponent, then
// written back the way ECMAScript's Number.prototype.toString lays digits out
// (as JCS, RFC 8785, does), but with every digit kept:
//
//	integers up to 21 digits      123, 100000
//	a decimal point when it fits  1.5, 0.001
//	otherwise an exponent         1e+21, 1.5e-7
//
// Negative zero is 0.
func canonicalNumber(s string) (string, error) {
	neg, digits, exp, err := splitNumber(s)
	if err != nil {
		return "", err
	}
	if digits == "" {
		return "0", nil
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	n := len(digits)
	point := n + exp // digits before the decimal point
	switch {
	case exp >= 0 && point <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", exp))
	case point > 0 && point <= 21:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	case point > -6 && point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if n > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if point-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(point - 1))
	}
	return b.String(), nil
}

// splitNumber parses a JSON number into its sign, its significant digits
// without leading or trailing zeros ("" for zero) and the exponent that
// scales them: value = digits * 10^exp.
func splitNumber(s string) (neg bool, digits string, exp int, err error) {
	bad := func() (bool, string, int, error) {
		return false, "", 0, fmt.Errorf("invalid number %q", s)
	}
	rest := s
	if strings.HasPrefix(rest, "-") {
		neg, rest = true, rest[1:]
	}
	mantissa, exponent, hasExp := strings.Cut(strings.ToLower(rest), "e")
	intPart, frac, hasPoint := strings.Cut(mantissa, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) || hasPoint && frac == "" {
		return bad()
	}
	if hasExp {
		e, perr := strconv.Atoi(exponent)
		if perr != nil || exponent == "" || e > maxExponent || e < -maxExponent {
			return bad()
		}
		exp = e
	}
	digits = strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		return false, "", 0, nil
	}
	return neg, digits, exp, nil
}

// maxExponent bounds the exponents accepted, far beyond any float64, so the
// arithmetic on them cannot overflow.
const maxExponent = 1 << 30

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

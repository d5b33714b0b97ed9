package shell

import "strings"

// firstToken is the first word of command as Python's shlex.split(command)
// splits it (POSIX mode, no comments, no punctuation characters): words are
// separated by white space; a backslash outside quotes takes the next
// character literally; inside single quotes everything is literal; inside
// double quotes a backslash escapes only '"' and '\'. ok is false when
// shlex.split would raise ValueError (an unclosed quote, a trailing
// backslash), and empty is true when there are no words. Only the first
// word is compared against the command lists, as the reference compares it;
// ';', '|', '&' and the like are part of a word here, exactly as in shlex.
func firstToken(command string) (token string, empty, ok bool) {
	const space = " \t\r\n"
	var (
		b       strings.Builder
		rs      = []rune(command)
		started bool
	)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case strings.ContainsRune(space, r):
			if started {
				return b.String(), false, restBalanced(rs[i:])
			}
		case r == '\\':
			if i+1 >= len(rs) {
				return "", false, false // "No escaped character"
			}
			i++
			b.WriteRune(rs[i])
			started = true
		case r == '\'':
			end := indexRune(rs, i+1, '\'')
			if end < 0 {
				return "", false, false // "No closing quotation"
			}
			b.WriteString(string(rs[i+1 : end]))
			i = end
			started = true
		case r == '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && (rs[j+1] == '"' || rs[j+1] == '\\') {
					j++
				}
				b.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return "", false, false
			}
			i = j
			started = true
		default:
			b.WriteRune(r)
			started = true
		}
	}
	if !started {
		return "", true, true
	}
	return b.String(), false, true
}

// restBalanced reports whether shlex would split the rest of a command
// without an error: every quote closed and no trailing backslash. shlex
// reads the whole command before the first word is used, so an unclosed
// quote anywhere skips the command checks.
func restBalanced(rs []rune) bool {
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\\':
			if i+1 >= len(rs) {
				return false
			}
			i++
		case '\'':
			end := indexRune(rs, i+1, '\'')
			if end < 0 {
				return false
			}
			i = end
		case '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && (rs[j+1] == '"' || rs[j+1] == '\\') {
					j++
				}
			}
			if j >= len(rs) {
				return false
			}
			i = j
		}
	}
	return true
}

func indexRune(rs []rune, from int, r rune) int {
	for i := from; i < len(rs); i++ {
		if rs[i] == r {
			return i
		}
	}
	return -1
}

package shell

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

func TestFirstToken(t *testing.T) {
	t.Parallel()
	// The program a POSIX shell would start first. Where that differs from
	// Python's shlex.split(command)[0], the reference's word, the comment
	// says so: the parse is a shell's, so "FOO=1 rm" and "rm;echo" name rm.
	for _, tc := range []struct {
		command, token string
		empty, ok      bool
	}{
		{"rm -rf x", "rm", false, true},
		{`"r"m x`, "rm", false, true},
		{"FOO=1 rm", "rm", false, true},  // shlex: FOO=1
		{"echo;rm", "echo", false, true}, // shlex: echo;rm
		{"rm;echo", "rm", false, true},   // shlex: rm;echo, which the default list let through
		{"FOO=1", "", true, true},        // shlex: FOO=1
		{"(rm x)", "(rm", false, true},
		{"$(echo rm) x", "$(echo rm)", false, true},
		{"'' rm", "", false, true},
		{`a\ b c`, "a b", false, true},
		{`"a\$b" c`, `a$b`, false, true}, // shlex: a\$b
		{`"a\"b" c`, `a"b`, false, true},
		{`r\m`, "rm", false, true},
		{"/bin/rm x", "/bin/rm", false, true},
		{"  ", "", true, true},
		{"", "", true, true},
		{`echo "unbalanced`, "", false, false},
		{`rm 'unbalanced`, "", false, false},
		{"rm x\necho 'unbalanced", "rm", false, true}, // sh runs the first line before it fails on the second
		{"rm x; echo 'unbalanced", "rm", false, true},
		{"FOO=1\necho 'unbalanced", "", true, true},
		{"echo a &&\nrm 'unbalanced", "", false, false},
		{`echo x\`, "echo", false, true}, // shlex: an error
		{"\trm\nx", "rm", false, true},
	} {
		token, empty, err := firstToken(tc.command)
		assert.Equal(t, tc.ok, err == nil, "%q ok: %v", tc.command, err)
		if err == nil {
			assert.Equal(t, tc.token, token, "%q", tc.command)
			assert.Equal(t, tc.empty, empty, "%q empty", tc.command)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	const unparsed = "The command cannot be parsed as a shell command line, so the program it starts cannot be checked against the allowed and denied commands ("
	defaults := policy{denied: DefaultDeniedCommands}
	allow := policy{allowed: []string{"echo", "ls"}}
	ops := policy{denied: DefaultDeniedCommands, operators: []string{">", ">>", "|"}}
	for _, tc := range []struct {
		name    string
		p       policy
		command string
		bad     bool
		want    string // "" when the command may run
	}{
		{"NUL first", ops, "rm\x00 > x", false, "The command contains a NUL byte, which cannot be passed to a process."},
		{"encoding before the rest", ops, "vim x > y", true, "The command contains characters that cannot be encoded for the operating system."},
		{"interactive", defaults, "vim notes.txt", false, "Interactive commands are not allowed. Command: 'vim notes.txt'"},
		{"interactive after white space", defaults, "  less x", false, "Interactive commands are not allowed. Command: '  less x'"},
		{"interactive before operators", ops, "top > x", false, "Interactive commands are not allowed. Command: 'top > x'"},
		{"interactive alone", defaults, "man", false, "Interactive commands are not allowed. Command: 'man'"},
		{"word boundary", defaults, "vimdiff a b", false, ""},
		{"no boundary in a letter", defaults, "manä", false, ""},
		{"boundary at punctuation", defaults, "ssh-keygen", false, "Interactive commands are not allowed. Command: 'ssh-keygen'"},
		{"sudo needs white space", defaults, "sudo ls", false, "Interactive commands are not allowed. Command: 'sudo ls'"},
		{"sudo alone passes", defaults, "sudo", false, ""},
		{"sudo with a tab", defaults, "sudo\tls", false, "Interactive commands are not allowed. Command: 'sudo\\tls'"},
		{"interactive allowed", policy{allowInteractive: true}, "vim x", false, ""},
		{"operator in configured order", ops, "a >> f", false, "Shell operator '>' is not allowed."},
		{"operator as a substring", ops, "ls 2>&1", false, "Shell operator '>' is not allowed."},
		{"operator before the denylist", ops, "rm x | y", false, "Shell operator '|' is not allowed."},
		{"denied", defaults, "rm -rf /", false, "Command 'rm' is denied."},
		{"denied after quotes", defaults, `"r"m x`, false, "Command 'rm' is denied."},
		{"first word only", defaults, "echo x; rm y", false, ""},
		{"chained", defaults, "true && rm y", false, ""},
		{"absolute path", defaults, "/bin/rm y", false, ""},
		{"assignment first", defaults, "FOO=1 rm", false, "Command 'rm' is denied."}, // the reference compares 'FOO=1'
		{"no space before ;", defaults, "rm;echo", false, "Command 'rm' is denied."}, // the reference compares 'rm;echo'
		{"subshell not allowed", allow, "(ls)", false, "Command '(ls)' is not in the allowed list."},
		{"unbalanced quote", defaults, "rm 'x", false, unparsed + "1:4: reached EOF without closing quote `'`)."},
		{"unbalanced quote on a later line", defaults, "rm -rf x\necho 'oops", false, "Command 'rm' is denied."},
		{"unbalanced quote later on the line", defaults, "rm -rf x; echo 'oops", false, "Command 'rm' is denied."},
		{"bash-only syntax later", defaults, "rm -rf x; echo ${x/a/b}", false, "Command 'rm' is denied."},
		{"unbalanced quote later, not allowed", allow, "cat x\necho 'oops", false, "Command 'cat' is not in the allowed list."},
		{"unbalanced quote later, allowed", allow, "echo x\necho 'oops", false, ""},
		{"unbalanced quote without lists", policy{}, "rm 'x", false, ""},
		{"unbalanced quote, allowed list", allow, "echo 'x", false, unparsed + "1:6: reached EOF without closing quote `'`)."},
		{"no tokens", defaults, "   ", false, ""},
		{"allowed", allow, "echo a | tr a b", false, ""},
		{"not allowed", allow, "cat x", false, "Command 'cat' is not in the allowed list."},
		{"empty word not allowed", allow, "'' ls", false, "Command '' is not in the allowed list."},
		{"repr picks double quotes", allow, `"it's" x`, false, `Command "it's" is not in the allowed list.`},
	} {
		err := tc.p.check(tc.command, tc.bad)
		if tc.want == "" {
			assert.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		msg, retry := capabilities.AsRetry(err)
		assert.True(t, retry, tc.name)
		assert.Equal(t, tc.want, msg, tc.name)
		assert.Equal(t, capabilities.RefusedCommand, capabilities.RefusalOf(err), tc.name)
	}
}

func TestLoneSurrogate(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		`"echo \ud83d\ude00"`: false,
		`"echo \ud83d"`:       true,
		`"echo \ude00 x"`:     true,
		`"echo \\ud83d"`:      false,
		`"plain"`:             false,
		`"\ud83dx"`:           true,
	} {
		assert.Equal(t, want, loneSurrogate([]byte(raw)), raw)
	}
}

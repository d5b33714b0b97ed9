package shell

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEnviron(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("LANG", "en_US.UTF-8")
	t.Setenv("LC_ALL", "C")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("AGENTSPEC_X", "1")
	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent")
	env, names := filterEnv(map[string]string{"FOO": "bar", "OPENAI_BASE": "x", "TERM": "xterm"}, []string{"OPENAI_*"})
	assert.Equal(t, []string{
		"PATH=/usr/bin:/bin", "HOME=/t/home", "TMPDIR=/t", "LANG=en_US.UTF-8", "LC_ALL=C", "TERM=xterm", "PWD=/w/d", "FOO=bar",
	}, environ("/t", "/w/d", env, names))

	t.Setenv("LANG", "")
	assert.Contains(t, environ("/t", "/w", nil, nil), "LANG=C.UTF-8")
}

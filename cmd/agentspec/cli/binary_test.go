package cli

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	binaryOnce    sync.Once
	binaryPath    string
	binaryErr     error
	reflectMethod []string // the linker's <ReflectMethod> marks, the first few
)

// agentspecBinary builds the agentspec command once per test process, for
// the tests that need the real process: exit codes, signals. The linker
// dumps its dependency graph as it goes (-dumpdep), which is read for
// TestLinkerDropsUnusedMethods.
func agentspecBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentspec-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "agentspec")
		cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", binaryPath, "github.com/agentspec/agentspec/cmd/agentspec")
		out, err := cmd.StderrPipe()
		if err != nil {
			binaryErr = err
			return
		}
		if binaryErr = cmd.Start(); binaryErr != nil {
			return
		}
		var other bytes.Buffer // what is not the graph: the compiler's errors
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.Contains(line, "<ReflectMethod>"):
				if len(reflectMethod) < 10 {
					reflectMethod = append(reflectMethod, line)
				}
			case !strings.Contains(line, " -> ") && other.Len() < 64<<10:
				other.WriteString(line + "\n")
			}
		}
		if err := cmd.Wait(); err != nil {
			binaryErr = &buildError{out: other.Bytes(), err: err}
		}
	})
	require.NoError(t, binaryErr)
	return binaryPath
}

// Nothing linked into agentspec may call a method by a name known only at
// run time (reflect's Method, MethodByName: text/template does, and cobra's
// templates with it): the linker would then keep every exported method of
// every type, the SDKs' among them, and the binary would grow by half.
func TestLinkerDropsUnusedMethods(t *testing.T) {
	t.Parallel()
	agentspecBinary(t)
	assert.Empty(t, reflectMethod, "the linker marks these as calling methods by name, which keeps every method")
}

type buildError struct {
	out []byte
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }

// A signal stops a run cleanly, and the exit code says which one ended it,
// as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM.
func TestSignalsEndRunsWith128PlusTheSignal(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			m := newSilentModel(t)
			cmd := exec.Command(bin, "run", "-q", m.spec)
			cmd.Env = m.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			select {
			case <-m.requested:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the run never reached the model; stderr: %s", stderr.String())
			}
			require.NoError(t, cmd.Process.Signal(tc.sig))
			err := cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, stderr.String())
			assert.Equal(t, tc.code, exit.ExitCode(), stderr.String())
		})
	}
}

// silentModel is an OpenAI model server that never answers, and a spec
// that runs on it: spec's runs wait in their first request, env is the
// environment that sends them there.
type silentModel struct {
	spec string
	env  []string
	// requested gets a value as a request arrives, gone as its client
	// goes; each holds one, the others are dropped.
	requested, gone chan struct{}
}

func newSilentModel(t *testing.T) *silentModel {
	t.Helper()
	m := &silentModel{requested: make(chan struct{}, 1), gone: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so the server notices the client go
		select {
		case m.requested <- struct{}{}:
		default:
		}
		<-r.Context().Done()
		select {
		case m.gone <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	m.spec = filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(m.spec, []byte("model: openai:gpt-test\ninstructions: Wait.\n"), 0o644))
	m.env = append(os.Environ(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	return m
}

// The conventions a new user tries first: --version, completion scripts,
// and a missing spec file as a usage error.
func TestConventionalEntryPoints(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	assert.Regexp(t, `^agentspec \S+ \(go\S+, \w+/\w+\)\n$`, string(out))
	same, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.Equal(t, string(same), string(out))

	for shell, marker := range map[string]string{"bash": "complete", "zsh": "#compdef agentspec", "fish": "complete -c agentspec", "powershell": "Register-ArgumentCompleter"} {
		out, err := exec.Command(bin, "completion", shell).Output()
		require.NoError(t, err, shell)
		assert.Contains(t, string(out), marker, shell)
	}

	cmd := exec.Command(bin, "validate", filepath.Join(t.TempDir(), "missing.yaml"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, exitUsage, exit.ExitCode())
	assert.Contains(t, stderr.String(), "missing.yaml: no such file")
}

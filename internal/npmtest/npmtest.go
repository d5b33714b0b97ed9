// Package npmtest installs the npm packages agentspec's MCP tests and
// benchmarks run against (the official TypeScript MCP SDK and reference
// servers) into a cache directory, once, so that the tests talk to the real
// third-party implementations. Without npm, or when the install fails, the
// caller skips with the reason.
package npmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Packages are the pinned versions installed.
var Packages = []string{
	"@modelcontextprotocol/sdk@1.32.2",
	"@modelcontextprotocol/server-filesystem@2026.8.31",
	"@modelcontextprotocol/server-everything@2026.8.31",
}

// How long an install may take, and how long a failed one is not retried.
const (
	installTimeout = 3 * time.Minute
	retryAfter     = 10 * time.Minute
)

// DirEnv names a variable that sets the install directory; the default is
// agentspec-npm under the user's cache directory.
const DirEnv = "AGENTSPEC_NPM_CACHE"

// Dir returns the install directory.
func Dir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "agentspec-npm"), nil
}

// Install makes sure Packages are installed and returns the directory that
// holds node_modules. The error says why they are not available.
func Install() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed")
	}
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Test binaries of several packages may install at once.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	unlock, err := lockFile(lock)
	if err != nil {
		return "", err
	}
	defer unlock()

	stamp := filepath.Join(dir, ".installed")
	want := strings.Join(Packages, "\n")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return dir, nil
	}
	// Without a registry every test package would wait for npm in turn; a
	// recent failure is reported again at once.
	failed := filepath.Join(dir, ".failed")
	if st, err := os.Stat(failed); err == nil && time.Since(st.ModTime()) < retryAfter {
		msg, _ := os.ReadFile(failed)
		return "", fmt.Errorf("%s (from %s ago; remove %s to retry now)", msg, time.Since(st.ModTime()).Round(time.Second), failed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
		"--fetch-timeout=30000", "--fetch-retries=1", "--prefix", dir}, Packages...)
	out, err := exec.CommandContext(ctx, npm, args...).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("npm install failed: %v: %s", err, lastLines(string(out), 5))
		_ = os.WriteFile(failed, []byte(msg), 0o644)
		return "", errors.New(msg)
	}
	_ = os.Remove(failed)
	return dir, os.WriteFile(stamp, []byte(want), 0o644)
}

// Bin returns the path of an installed package's script, such as
// "server-filesystem/dist/index.js" under @modelcontextprotocol.
func Bin(dir, rel string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", rel)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

package confine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	availableOnce sync.Once
	availableErr  error
)

// Available reports whether commands can be confined here: nil, or an
// error naming everything that is missing, with the advice to run them
// with `sandbox: off`. It checks once, the last time by confining `true`,
// and later calls return the first answer.
func Available() error {
	availableOnce.Do(func() { availableErr = unavailable(missing()) })
	return availableErr
}

// Runs reports whether commands run here at all, confined or not: nil on
// Linux.
func Runs() error { return nil }

// missing lists what confinement lacks here.
func missing() []string {
	var out []string
	if why := userNamespacesOff(); why != "" {
		out = append(out, why)
	}
	if landlockABI() < 1 {
		out = append(out, "Landlock is not enabled in this kernel")
	}
	if _, ok := seccompFilter(false); !ok {
		out = append(out, "no seccomp filter is built for this architecture")
	} else if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		out = append(out, "seccomp is not enabled in this kernel")
	}
	if os.Geteuid() == 0 {
		if why := pidsCgroupMissing(); why != "" {
			out = append(out, why)
		}
	}
	if len(out) == 0 {
		if err := trial(); err != nil {
			out = append(out, "a trial confined command failed ("+err.Error()+")")
		}
	}
	return out
}

// userNamespacesOff names the setting that forbids user namespaces, or
// "" when none does.
func userNamespacesOff() string {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" && os.Geteuid() != 0 {
		return "unprivileged user namespaces are disabled (kernel.apparmor_restrict_unprivileged_userns = 1)"
	}
	if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" && os.Geteuid() != 0 {
		return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		return "user namespaces are disabled (user.max_user_namespaces = 0)"
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return "this kernel has no user namespaces"
	}
	return ""
}

// trial confines `true`: whatever else forbids namespaces, mounts or the
// rest (a container's seccomp profile, say) shows here.
func trial() error {
	dir, err := os.MkdirTemp("", "agentspec-confine-")
	if err != nil {
		return fmt.Errorf("creating a directory for it: %w", err)
	}
	defer os.RemoveAll(dir)
	root, temp := filepath.Join(dir, "w"), filepath.Join(dir, "t")
	for _, d := range []string{root, temp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("creating a directory for it: %w", err)
		}
	}
	var stderr strings.Builder
	p, err := Start(context.Background(), Command{
		Script: "exit 0", Dir: root, Env: []string{}, Sandbox: true, Stderr: &stderr,
		Policy: Policy{Root: root, Temp: temp},
	})
	if err != nil {
		return err
	}
	exit, err := p.Wait()
	if err != nil {
		return err
	}
	if exit != (Exit{}) {
		return errors.New(exit.String() + ": " + strings.TrimSpace(stderr.String()))
	}
	return nil
}

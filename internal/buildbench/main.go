// Command buildbench measures a cold build of agentspec against a Go hello
// world built the same way: each with an empty build cache of its own (the
// module cache is shared and warm: downloads are not counted), the CPU time
// (user and system, the go command and every compiler and linker it ran),
// the elapsed time and the largest resident set of any of those processes.
// It then reports the binary's size, plain and stripped (-s -w), against the
// targets, the size of internal/buildbench/floor (the provider SDKs alone),
// and which modules the build's CPU went to, read off the go command's
// -debug-actiongraph. scripts/bench-build.sh runs it; a cold build takes
// minutes.
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	top := flag.Int("top", 8, "modules to list by compile CPU")
	flag.Parse()
	if err := run(*top); err != nil {
		fmt.Fprintln(os.Stderr, "buildbench:", err)
		os.Exit(1)
	}
}

type build struct {
	cpu, elapsed time.Duration
	maxRSS       int64 // bytes
}

func run(top int) error {
	scratch, err := os.MkdirTemp("", "buildbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	hello := filepath.Join(scratch, "hello")
	if err := os.Mkdir(hello, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(hello, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(hello, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"), 0o644); err != nil {
		return err
	}

	// The downloads are not the build's: fetch what is missing first, and
	// learn each package's module on the way.
	list := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}",
		"./cmd/agentspec", "./internal/buildbench/floor")
	list.Stderr = os.Stderr
	listed, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	modules := map[string]string{}
	for line := range strings.Lines(string(listed)) {
		if pkg, mod, ok := strings.Cut(strings.TrimSpace(line), " "); ok && mod != "" {
			modules[pkg] = mod
		}
	}
	fmt.Fprintln(os.Stderr, "buildbench: a cold build of a hello world, then of agentspec (minutes)")
	h, err := goBuild(filepath.Join(scratch, "cache-hello"), hello, "-o", filepath.Join(scratch, "hello.bin"), ".")
	if err != nil {
		return fmt.Errorf("hello world: %w", err)
	}
	graph := filepath.Join(scratch, "actions.json")
	cache := filepath.Join(scratch, "cache-agentspec")
	bin := filepath.Join(scratch, "agentspec")
	a, err := goBuild(cache, ".", "-debug-actiongraph="+graph, "-o", bin, "./cmd/agentspec")
	if err != nil {
		return fmt.Errorf("agentspec: %w", err)
	}
	fmt.Printf("cold go build, empty build cache: CPU (user+sys), elapsed, peak RSS of one process\n")
	fmt.Printf("  hello world  %7.1f s CPU  %6.1f s  %5d MB\n", h.cpu.Seconds(), h.elapsed.Seconds(), h.maxRSS>>20)
	fmt.Printf("  agentspec    %7.1f s CPU  %6.1f s  %5d MB\n", a.cpu.Seconds(), a.elapsed.Seconds(), a.maxRSS>>20)
	fmt.Printf("  ratio agentspec/hello world: CPU %.1fx\n", a.cpu.Seconds()/h.cpu.Seconds())

	// Warm from here on: only the link differs.
	stripped := filepath.Join(scratch, "agentspec-stripped")
	if _, err := goBuild(cache, ".", "-ldflags=-s -w", "-o", stripped, "./cmd/agentspec"); err != nil {
		return err
	}
	floor := filepath.Join(scratch, "floor")
	if _, err := goBuild(cache, ".", "-ldflags=-s -w", "-o", floor, "./internal/buildbench/floor"); err != nil {
		return err
	}
	const mib = 1 << 20
	fmt.Printf("binary: go build %.1f MiB (target <= 64 MiB), make build (-s -w) %.1f MiB (target < 40 MiB)\n",
		size(bin)/mib, size(stripped)/mib)
	fmt.Printf("  the provider SDKs alone (internal/buildbench/floor, -s -w): %.1f MiB; a hello world: %.1f MiB\n",
		size(floor)/mib, size(filepath.Join(scratch, "hello.bin"))/mib)

	mods, total, err := cpuByModule(graph, modules)
	if err != nil {
		return err
	}
	fmt.Printf("agentspec's cold build, compile and link CPU by module (of %.0f s):\n", total.Seconds())
	for _, m := range mods[:min(top, len(mods))] {
		fmt.Printf("  %6.1f s  %4.1f%%  %s\n", m.cpu.Seconds(), 100*m.cpu.Seconds()/total.Seconds(), m.name)
	}
	return nil
}

// goBuild runs go build with its own GOCACHE in dir and measures it.
func goBuild(cache, dir string, args ...string) (build, error) {
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOCACHE="+cache)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return build{}, err
	}
	return build{
		elapsed: time.Since(start),
		cpu:     cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		maxRSS:  maxRSS(cmd.ProcessState),
	}, nil
}

func size(path string) float64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(st.Size())
}

type moduleCPU struct {
	name string
	cpu  time.Duration
}

// cpuByModule sums the CPU of the compile and link actions in the go
// command's action graph by module, given each package's (the standard
// library's are "std").
func cpuByModule(path string, modules map[string]string) ([]moduleCPU, time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var actions []struct {
		Package         string
		CmdUser, CmdSys time.Duration // nanoseconds
	}
	if err := json.Unmarshal(data, &actions); err != nil {
		return nil, 0, fmt.Errorf("reading the action graph: %w", err)
	}
	sums := map[string]time.Duration{}
	var total time.Duration
	for _, a := range actions {
		c := a.CmdUser + a.CmdSys
		if c == 0 {
			continue
		}
		mod := modules[a.Package]
		if mod == "" {
			mod = "std"
		}
		sums[mod] += c
		total += c
	}
	var out []moduleCPU
	for name, c := range sums {
		out = append(out, moduleCPU{name, c})
	}
	slices.SortFunc(out, func(a, b moduleCPU) int { return cmp.Compare(b.cpu, a.cpu) })
	return out, total, nil
}

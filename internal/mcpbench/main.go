// Command mcpbench measures `agentspec mcp` over stdio against the official
// MCP filesystem server (@modelcontextprotocol/server-filesystem), both
// spoken to by the same Go SDK client in the same run:
//
//   - read_file of a 2 KB file: per-call latency (p50) and calls per second,
//     in interleaved blocks (agentspec then the anchor, then the other way
//     round), reported as the medians over blocks and the median of the
//     per-pair ratios;
//   - session start-up: from spawning the server to the answer to its
//     initialize request, read off the raw pipe, in interleaved pairs.
//
// scripts/bench-mcp.sh runs it; it needs node and the npm packages of
// internal/npmtest, and says so when they are missing.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentspec/agentspec/internal/npmtest"
)

func main() {
	bin := flag.String("agentspec", "bin/agentspec", "the agentspec binary")
	blocks := flag.Int("blocks", 10, "block pairs")
	calls := flag.Int("calls", 300, "calls per block")
	starts := flag.Int("starts", 10, "start-up pairs")
	flag.Parse()
	if err := run(*bin, *blocks, *calls, *starts); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

const protocolVersion = "2025-11-25"

type server struct {
	name string
	argv []string
	tool string
	cs   *sdk.ClientSession
}

func run(bin string, blocks, calls, starts int) error {
	npmDir, err := npmtest.Install()
	if err != nil {
		fmt.Printf("skipped: %v\n", err)
		return nil
	}
	bin, err = filepath.Abs(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mcpbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return err
	}
	var content strings.Builder
	for i := 0; content.Len() < 2048-40; i++ {
		fmt.Fprintf(&content, "line %03d: the quick brown fox jumps\n", i)
	}
	data := content.String()
	for len(data) < 2048 {
		data += "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "two-kb.txt"), []byte(data[:2048]), 0o644); err != nil {
		return err
	}
	official := npmtest.Bin(npmDir, "server-filesystem/dist/index.js")
	servers := []*server{
		{name: "agentspec mcp", argv: []string{bin, "mcp", "--root", dir}, tool: "read_file"},
		{name: "server-filesystem", argv: []string{"node", official, dir}, tool: "read_text_file"},
	}
	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "mcpbench", Version: "1"}, nil)
	for _, s := range servers {
		cmd := exec.Command(s.argv[0], s.argv[1:]...)
		// Both speak the protocol version the official server and today's
		// clients speak; 2026-07-28 would add per-request metadata to
		// agentspec's calls only.
		opts := &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion}
		if s.cs, err = client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, opts); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		defer s.cs.Close()
		if _, err := measure(ctx, s, 200); err != nil { // warm-up (JIT, caches)
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}

	fmt.Printf("read_file of a 2 KB file over stdio, %d interleaved block pairs of %d calls, Go SDK client, protocol %s\n", blocks, calls, protocolVersion)
	p50 := map[string][]float64{}
	rate := map[string][]float64{}
	var p50Ratio, rateRatio []float64
	for b := range blocks {
		order := servers
		if b%2 == 1 {
			order = []*server{servers[1], servers[0]}
		}
		got := map[string][]time.Duration{}
		elapsed := map[string]time.Duration{}
		for _, s := range order {
			start := time.Now()
			lat, err := measure(ctx, s, calls)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			elapsed[s.name] = time.Since(start)
			got[s.name] = lat
		}
		for _, s := range servers {
			p50[s.name] = append(p50[s.name], ms(median(got[s.name])))
			rate[s.name] = append(rate[s.name], float64(calls)/elapsed[s.name].Seconds())
		}
		a, o := servers[0].name, servers[1].name
		p50Ratio = append(p50Ratio, p50[a][b]/p50[o][b])
		rateRatio = append(rateRatio, rate[a][b]/rate[o][b])
	}
	for _, s := range servers {
		if v := s.cs.InitializeResult().ProtocolVersion; v != protocolVersion {
			return fmt.Errorf("%s negotiated protocol %s, not %s", s.name, v, protocolVersion)
		}
	}
	for _, s := range servers {
		fmt.Printf("  %-18s p50 %.3f ms   %6.0f calls/s\n", s.name, medianF(p50[s.name]), medianF(rate[s.name]))
	}
	fmt.Printf("  ratio agentspec/official: p50 %.2f (target <= 0.50), calls/s %.1fx\n", medianF(p50Ratio), medianF(rateRatio))

	fmt.Printf("session start-up, spawn to answered initialize, %d interleaved pairs\n", starts)
	startup := map[string][]float64{}
	for i := range starts {
		order := servers
		if i%2 == 1 {
			order = []*server{servers[1], servers[0]}
		}
		for _, s := range order {
			d, err := startupTime(s.argv)
			if err != nil {
				return fmt.Errorf("%s start-up: %w", s.name, err)
			}
			startup[s.name] = append(startup[s.name], ms(d))
		}
	}
	for _, s := range servers {
		fmt.Printf("  %-18s median %.1f ms\n", s.name, medianF(startup[s.name]))
	}
	a, o := medianF(startup[servers[0].name]), medianF(startup[servers[1].name])
	fmt.Printf("  agentspec mcp start-up %.1f ms (target < 100 ms), %.1fx faster than the official server\n", a, o/a)
	return nil
}

func measure(ctx context.Context, s *server, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	params := &sdk.CallToolParams{Name: s.tool, Arguments: map[string]any{"path": "two-kb.txt"}}
	for range n {
		start := time.Now()
		res, err := s.cs.CallTool(ctx, params)
		lat = append(lat, time.Since(start))
		if err != nil {
			return nil, err
		}
		if res.IsError || len(res.Content) == 0 {
			return nil, fmt.Errorf("%s failed: %v", s.tool, res.Content)
		}
	}
	return lat, nil
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpbench","version":"1"}}}` + "\n"

// startupTime spawns the server, sends initialize at once and returns the
// time until the answer's line arrives.
func startupTime(argv []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if _, err := stdin.Write([]byte(initialize)); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if !strings.Contains(line, `"result"`) {
		return 0, fmt.Errorf("unexpected answer: %s", line)
	}
	return d, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

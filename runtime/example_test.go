package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// Run a spec with an injected model over a workspace, veto some file changes
// from a listener, and check the answer with a validator, as docs/embedding.md shows.
func ExampleRun() {
	workspace, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(workspace)
	os.WriteFile(filepath.Join(workspace, "notes.md"), []byte("# Notes\nShip on Friday.\n"), 0o644)
	os.Mkdir(filepath.Join(workspace, "migrations"), 0o755)
	specFile := filepath.Join(workspace, "agent.yaml")
	os.WriteFile(specFile, []byte("instructions: Summarise notes.md into summary.md.\ncapabilities:\n  - FileSystem\n"), 0o644)

	s, err := spec.LoadFile(specFile)
	if err != nil {
		fmt.Println(err)
		return
	}
	model := script.New(
		script.Calls(script.Call("read_file", map[string]any{"path": "notes.md"})),
		script.Calls(
			script.Call("write_file", map[string]any{"path": "migrations/001.sql", "content": "DROP TABLE x;\n"}),
			script.Call("write_file", map[string]any{"path": "summary.md", "content": "Ship on Friday.\n"}),
		),
		script.Say("Wrote summary.md."), // rejected by the validator
		script.Say("## Summary\nWrote summary.md."),
	)
	res, err := runtime.Run(context.Background(), s,
		runtime.WithModel(model, runtime.DialectOpenAI),
		runtime.WithWorkspace(workspace),
		runtime.WithListener(func(ctx context.Context, ev capabilities.Event) error {
			if req, ok := ev.(*filesystem.FileChangeRequestEvent); ok && strings.HasPrefix(req.Path, "migrations/") {
				req.Cancel("migrations need a human")
				fmt.Println("cancelled:", req.Path)
			}
			return nil
		}),
		runtime.WithValidator(func(ctx context.Context, r *runtime.Result) error {
			if !strings.Contains(r.Output, "## Summary") {
				return runtime.Feedback("Add a ## Summary section.")
			}
			return nil
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	summary, _ := os.ReadFile(filepath.Join(workspace, "summary.md"))
	_, err = os.Stat(filepath.Join(workspace, "migrations", "001.sql"))
	fmt.Printf("answer: %q\n", res.Output)
	fmt.Printf("summary.md: %q\n", summary)
	fmt.Println("migrations written:", err == nil)
	fmt.Println("requests:", res.Usage.Requests, "tool calls:", res.Usage.ToolCalls)
	// Output:
	// cancelled: migrations/001.sql
	// answer: "## Summary\nWrote summary.md."
	// summary.md: "Ship on Friday.\n"
	// migrations written: false
	// requests: 4 tool calls: 3
}

package filesystem

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
)

// updateGolden rewrites the golden files under testdata/golden from the
// current outputs: go test ./capabilities/filesystem -run X -update
var updateGolden = flag.Bool("update", false, "rewrite testdata/golden files")

// goldenCompare checks got against testdata/golden/<name>.golden.
func goldenCompare(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run with -update to create it)", path, err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

// mustWrite creates root/rel with content, and its parents.
func mustWrite(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func readBack(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newTestFS builds a FileSystem over a fresh temporary root holding files.
// Options.Tools defaults to the tools this file's tests exercise.
func newTestFS(t *testing.T, opts Options, files map[string]string) (*Capability, string) {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		mustWrite(t, root, rel, content)
	}
	if opts.Tools == nil {
		opts.Tools = []string{ToolReadFile, ToolWriteFile, ToolEditFile, ToolCreateDirectory, ToolFileInfo}
	}
	c, err := New(opts, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, root
}

// callTool calls the named tool with args (marshalled to JSON).
func callTool(ctx context.Context, t *testing.T, c *Capability, name string, args any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range c.tools {
		if tl.Name() == name {
			return tl.Call(ctx, raw)
		}
	}
	t.Fatalf("tool %s not registered", name)
	return "", nil
}

// result is a call's outcome as one string: the output, or "RETRY: msg", or
// "FATAL: err".
func result(out string, err error) string {
	if err == nil {
		return out
	}
	if msg, ok := capabilities.AsRetry(err); ok {
		return "RETRY: " + msg
	}
	return "FATAL: " + err.Error()
}

// recorder collects the events of a run; onRequest, when set, sees each
// change request before the tool goes on.
type recorder struct {
	events    []capabilities.Event
	onRequest func(*FileChangeRequestEvent)
}

func (r *recorder) ctx() context.Context {
	ctx := capabilities.WithCall(context.Background(), capabilities.CallInfo{ID: "call-1", Tool: "tool"})
	return capabilities.WithListener(ctx, func(_ context.Context, ev capabilities.Event) error {
		r.events = append(r.events, ev)
		if req, ok := ev.(*FileChangeRequestEvent); ok && r.onRequest != nil {
			r.onRequest(req)
		}
		return nil
	})
}

func (r *recorder) kinds() string {
	var ks []string
	for _, ev := range r.events {
		ks = append(ks, strings.TrimPrefix(ev.Kind(), EventNamespace+"."))
	}
	return strings.Join(ks, ",")
}

// call is one tool call of a transcript.
type call struct {
	tool string
	args map[string]any
}

// transcript runs calls in order and records each with its outcome, for a
// golden file.
func transcript(ctx context.Context, t *testing.T, c *Capability, calls []call) string {
	t.Helper()
	var sb strings.Builder
	for _, cl := range calls {
		args, err := json.Marshal(cl.args)
		if err != nil {
			t.Fatal(err)
		}
		out, err := callTool(ctx, t, c, cl.tool, cl.args)
		fmt.Fprintf(&sb, "### %s %s\n%s\n\n", cl.tool, args, result(out, err))
	}
	return sb.String()
}

// decodeArgs decodes a call's arguments into v, a pointer to a struct, as a
// tool does.
func decodeArgs(raw json.RawMessage, v any) error {
	spec := argSpecOf(reflect.TypeOf(v).Elem())
	return spec.decode(raw, v)
}

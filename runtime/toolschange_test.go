package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/script"
)

// changingTools is a capability whose tools change as it is used, as an MCP
// server's do when it announces a new list: its grow tool adds one.
type changingTools struct {
	mu      sync.Mutex
	tools   []capabilities.Tool
	version uint64
	listed  int // calls of Tools
}

func newChangingTools(added capabilities.Tool) *changingTools {
	c := &changingTools{}
	c.tools = []capabilities.Tool{funcTool{name: "grow", fn: func(context.Context, json.RawMessage) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.tools = append(c.tools, added)
		c.version++
		return "grown", nil
	}}}
	return c
}

func (c *changingTools) Tools(context.Context) ([]capabilities.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listed++
	return slices.Clone(c.tools), nil
}

func (c *changingTools) ToolsVersion() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// A capability whose tools change during a run has them listed again
// before the next request: the model is offered the tool added, and its
// call of it is made. Tools are not listed again while they stay as they
// were.
func TestRunOffersToolsThatChanged(t *testing.T) {
	t.Parallel()
	late := &echoTool{name: "late"}
	c := newChangingTools(late)
	m := script.New(
		script.Calls(script.Call("grow", map[string]any{})),
		script.Calls(script.Call("late", map[string]any{})),
		script.Calls(script.Call("late", map[string]any{})),
		script.Say("done"),
	)
	rec := &recorder{}
	res, err := runScript(t, newSpec(), m, nil, WithCapabilities(c), WithListener(rec.listen))
	require.NoError(t, err)
	assert.Equal(t, []string{"grown", "late({})", "late({})"}, toolResults(res.Transcript))
	var offered []int
	for _, ev := range eventsOf[ModelRequest](rec) {
		offered = append(offered, ev.Tools)
	}
	assert.Equal(t, []int{1, 2, 2, 2}, offered)
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, 2, c.listed, "the tools were listed again though they had not changed")
}

// A tool that joins under a name another capability's tool has ends the
// run, as it would have at its start.
func TestRunToolThatJoinsUnderATakenName(t *testing.T) {
	t.Parallel()
	c := newChangingTools(&echoTool{name: "read_file"})
	m := script.New(
		script.Calls(script.Call("grow", map[string]any{})),
		script.Say("done"),
	)
	_, err := runScript(t, newSpec(), m, []capabilities.Tool{&echoTool{name: "read_file"}}, WithCapabilities(c))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `two capabilities provide a tool named "read_file"`)
}

// A capability that withdraws every tool after the model called one leaves
// the tools it offered declared, none callable (tool choice none), since
// the history holds calls of them, which Anthropic's API and Bedrock's
// refuse in a request without tools; a call of one made anyway (Bedrock has
// no "none") is answered as one of an unknown tool.
func TestRunAllToolsWithdrawn(t *testing.T) {
	t.Parallel()
	c := &changingTools{}
	c.tools = []capabilities.Tool{funcTool{name: "drop", fn: func(context.Context, json.RawMessage) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.tools = nil
		c.version++
		return "dropped", nil
	}}}
	withdrawn := &script.Expect{Tools: []string{"drop"}, ToolChoice: "none"}
	m := script.New(
		script.Calls(script.Call("drop", map[string]any{})),
		script.Turn{ToolCalls: []script.ToolCall{script.Call("drop", map[string]any{})}, Expect: withdrawn},
		script.Turn{Text: "done", Expect: withdrawn},
	)
	rec := &recorder{}
	res, err := runScript(t, newSpec(), m, nil, WithCapabilities(c), WithListener(rec.listen))
	require.NoError(t, err)
	assert.Equal(t, []string{"dropped", `Error: unknown tool "drop"; no tools are offered`}, toolResults(res.Transcript))
	var offered []int
	for _, ev := range eventsOf[ModelRequest](rec) {
		offered = append(offered, ev.Tools)
	}
	assert.Equal(t, []int{1, 0, 0}, offered)
}

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/script"
)

// BenchmarkToolRounds measures the runtime's own overhead: a run whose
// scripted model calls a trivial tool for a number of rounds, then answers.
// ns/round is the cost of one round (request, normalising, replay, tool call,
// events), the run's setup spread over its rounds.
func BenchmarkToolRounds(b *testing.B) {
	noop := funcTool{name: "noop", fn: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }}
	caps := WithCapabilities(toolCaps{noop})
	listener := WithListener(func(context.Context, capabilities.Event) error { return nil })
	s := newSpec()
	for _, rounds := range []int{1, 10} {
		b.Run(fmt.Sprintf("rounds=%d", rounds), func(b *testing.B) {
			turns := make([]script.Turn, rounds+1)
			for i := range rounds {
				turns[i] = script.Calls(script.Call("noop", map[string]any{"path": "a.txt"}))
			}
			turns[rounds] = script.Say("done")
			b.ReportAllocs()
			for b.Loop() {
				m := script.New(turns...)
				if _, err := Run(context.Background(), s, WithModel(m, DialectOpenAI), WithWorkspace("."), caps, listener); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rounds), "ns/round")
		})
	}
}

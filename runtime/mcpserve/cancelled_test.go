package mcpserve

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
)

func TestCallsAndCancels(t *testing.T) {
	t.Parallel()
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, tc := range []struct {
		body            string
		calls, canceled []jsonrpc.ID
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`, []jsonrpc.ID{id(float64(2))}, nil},
		{` {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"Esc"}}`, nil, []jsonrpc.ID{id(float64(2))}},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`, nil, []jsonrpc.ID{id("a")}},
		{`[{"jsonrpc":"2.0","id":"a","method":"tools/call"},{"jsonrpc":"2.0","id":5,"method":"ping"},` +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}},{"jsonrpc":"2.0","id":1,"result":{}}]`,
			[]jsonrpc.ID{id("a"), id(float64(5))}, []jsonrpc.ID{id(float64(4))}},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, nil},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, nil, nil},
		{`not JSON`, nil, nil},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, nil},
	} {
		calls, canceled := callsAndCancels([]byte(tc.body))
		assert.Equal(t, tc.calls, calls, tc.body)
		assert.Equal(t, tc.canceled, canceled, tc.body)
	}
}

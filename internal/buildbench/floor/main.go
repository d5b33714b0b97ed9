// Command floor is the smallest program that uses the two provider SDKs as
// agentspec does: it encodes one request param of each API. Its binary's
// size is what linking anthropic-sdk-go and openai-go costs any program,
// the floor under agentspec's own; internal/buildbench reports it.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func main() {
	var sizes []int
	for _, p := range []any{
		anthropic.MessageNewParams{Model: "m"},
		openai.ChatCompletionNewParams{Model: "m"},
		responses.ResponseNewParams{},
	} {
		b, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		sizes = append(sizes, len(b))
	}
	fmt.Println(sizes)
}

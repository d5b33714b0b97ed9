// Command agentspec validates and runs declarative agent specs.
package main

import (
	"context"
	"os"

	"github.com/agentspec/agentspec/cmd/agentspec/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

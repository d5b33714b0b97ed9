// Command agentspec validates and runs declarative agent specs.
package main

import (
	"context"
	"os"

	"github.com/agentspec/agentspec/capabilities/shell"
	"github.com/agentspec/agentspec/cmd/agentspec/cli"
	"github.com/agentspec/agentspec/internal/childproc"
)

func main() {
	// A Shell command starts as this program re-executed: it must become
	// the command's helper before anything else runs.
	shell.Main()
	// Before anything runs, so that no process agentspec starts (ripgrep
	// as well as the MCP servers, which childproc.Start would harden for
	// anyway) can read the provider keys in its environment. An error is
	// left to childproc.Start, which returns it when a server is started.
	_ = childproc.Harden()
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

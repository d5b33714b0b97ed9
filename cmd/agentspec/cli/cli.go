// Package cli is the agentspec command line. cmd/agentspec is a two-line main
// over it; a program that registers its own capability types calls Main too
// and gets the same CLI.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentspec/agentspec/internal/suggest"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/spec"
)

// Main runs the CLI with the given arguments and streams and returns the exit
// code. It registers the built-in capability types in capabilities.Default
// (once per process). Programs that register their own capability types
// there call it from their own main, so they get the same CLI.
//
// Ctrl-C (SIGINT) and SIGTERM stop the command cleanly (a run ends between
// tool calls); the exit code is then 128 plus the signal's number, 130 or
// 143, as shells report a process the signal ended, except for the
// long-running servers (`agentspec mcp`, `agentspec worker`), for which a
// signal is the ordinary end. A second signal while that clean stop goes on
// makes Main return at once, 128 plus its number whatever the command,
// having said on stderr what is left undone; the command's goroutine is not
// waited for, so the caller is expected to exit.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := registerBuiltins(); err != nil {
		printError(stderr, err)
		return exitFailure
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	var got atomic.Value             // the first signal received
	again := make(chan os.Signal, 1) // a second one, during the clean stop
	returned := make(chan struct{})
	defer close(returned)
	go func() {
		select {
		case sig := <-signals:
			got.Store(sig)
			cancel()
		case <-ctx.Done():
			return
		}
		select {
		case sig := <-signals:
			again <- sig
		case <-returned:
		}
	}()

	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	target, _, _ := root.Find(args) // what a second signal leaves undone is said in its terms
	type outcome struct {
		cmd *cobra.Command
		err error
	}
	ran := make(chan outcome, 1)
	go func() {
		cmd, err := root.ExecuteContextC(ctx)
		ran <- outcome{cmd, err}
	}()
	var out outcome
	select {
	case out = <-ran:
	case sig := <-again:
		select {
		case out = <-ran: // it ended all the same
		default:
			fmt.Fprintf(stderr, "agentspec: %s again: stopped at once, without the clean stop; %s\n", signalWord(sig), leftUndone(target))
			return 128 + signalNumber(sig)
		}
	}
	cmd, err := out.cmd, out.err
	if err == nil && cmd != nil && cmd.Annotations[helpRefused] != "" {
		err = errors.New(cmd.Annotations[helpRefused])
	}
	if sig, ok := got.Load().(os.Signal); ok && (cmd == nil || cmd.Annotations[signalEndsCleanly] == "") {
		if err != nil && !errors.Is(err, context.Canceled) {
			var ee *exitError
			if !errors.As(err, &ee) || ee.err != nil {
				printError(stderr, err)
			}
		}
		return 128 + signalNumber(sig)
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printError(stderr, ee.err)
		}
		return ee.code
	}
	// Anything cobra itself rejects (unknown command or flag, wrong arity) is usage.
	printError(stderr, err)
	return exitUsage
}

// printError writes err for a person: spec problems one FILE:LINE:COL line
// each, anything else on one line after the program's name. An error can
// quote what a model, a tool or a server said: whatever in it a terminal
// would act on is shown escaped.
func printError(w io.Writer, err error) {
	var list spec.Errors
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(w, text.VisibleLines(e.Error()))
		}
		return
	}
	// One problem alone (a capability that could not set the workspace up)
	// is a spec problem all the same, FILE:LINE:COL first.
	var one *spec.Error
	if errors.As(err, &one) && one.Error() == err.Error() {
		fmt.Fprintln(w, text.VisibleLines(one.Error()))
		return
	}
	fmt.Fprintln(w, "agentspec:", text.VisibleLines(err.Error()))
}

// Exit codes shared by the commands.
const (
	exitOK        = 0
	exitFailure   = 1 // invalid spec, failed run, fatal tool error
	exitUsage     = 2 // bad flags or arguments, unloadable spec for commands that need one
	exitToolRetry = 3 // a tool answered with an error the model could correct
)

// exitError carries an exit code out of a command. A nil err means the
// command already reported what went wrong.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// commands are the constructors of the subcommands, every one of them (help
// lists them sorted by name, whatever their order here).
var commands = []func() *cobra.Command{
	newBatchCmd,
	newCacheCmd,
	newGraphCmd,
	newMCPCmd,
	newQueueCmd,
	newRunCmd,
	newSchemaCmd,
	newSubmitCmd,
	newToolCmd,
	newToolsCmd,
	newValidateCmd,
	newVersionCmd,
	newWorkerCmd,
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentspec",
		Short: "Validate and run declarative agent specs",
		Long: `agentspec runs agents described in agent.yaml: a model, instructions, capabilities such as
FileSystem, an output schema and workspace settings. A pipeline file (steps: at its top level)
runs several of them over one workspace. A spec runs offline, with no API key, on a scripted
model (model: script:FILE) or on the test model, which calls every tool once, for real: try
"agentspec run SPEC --model test --workspace SCRATCH_DIR".`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version is a flag of its own, not cobra's: cobra prints a custom
	// version line through text/template, whose calls of methods by name
	// make the linker keep every method of every type (the binary grew by
	// 52 MB; TestLinkerDropsUnusedMethods keeps it out).
	showVersion := root.Flags().BoolP("version", "v", false, "version for agentspec")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *showVersion {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		}
		return cmd.Help()
	}
	for _, f := range commands {
		root.AddCommand(f())
	}
	root.InitDefaultCompletionCmd() // cobra's completion command, listed like the others
	refuseUnknownShells(root)
	refuseUnknownCommands(root)
	refuseUnknownHelpTopics(root)
	showUsageOnUsageErrors(root)
	completeOutputs(root)
	completeVars(root)
	return root
}

// refuseUnknownShells makes `agentspec completion SHELL` for a shell it has
// no script for a usage error, as an unknown subcommand of queue or cache
// is: cobra's completion command has no Run of its own, so cobra printed
// its help on stdout with status 0 before looking at the argument, and
// `source <(agentspec completion tcsh)` read that help as a script.
func refuseUnknownShells(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() == "completion" && c.RunE == nil && c.Run == nil {
			c.Args = cobra.NoArgs
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
}

// refuseUnknownCommands makes a word that names none of a command's
// subcommands (agentspec validat, agentspec cache stat) a usage error said
// on one line, as the others are, with the subcommand it most likely
// misspells, the ones there are and where the help is: cobra put the root's
// suggestion on lines of its own and gave the other commands' none.
func refuseUnknownCommands(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() {
			return
		}
		c.DisableSuggestions = true
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	// --help after such a word (agentspec validat --help) reaches the help
	// before the Args: it is refused all the same, rather than answered
	// with the parent's help and status 0. Main reports what is noted.
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if words := cmd.Flags().Args(); cmd.HasSubCommands() && len(words) > 0 && cmd.Flags().Parsed() {
			if cmd.Annotations == nil {
				cmd.Annotations = map[string]string{}
			}
			cmd.Annotations[helpRefused] = unknownCommand(cmd, words[0]).Error()
			return
		}
		help(cmd, args)
	})
}

// helpRefused, as a command's annotation, is the usage error its help,
// asked for after a word that names none of its subcommands, was refused
// with.
const helpRefused = "agentspec/help-refused"

// unknownCommand is the error for name, which names no subcommand of cmd.
func unknownCommand(cmd *cobra.Command, name string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("unknown command %q for %q%s; valid commands: %s (see %s --help)",
		name, cmd.CommandPath(), suggest.DidYouMean(name, names), strings.Join(names, ", "), cmd.CommandPath())
}

// refuseUnknownHelpTopics makes `agentspec help COMMAND` for a command
// agentspec does not have a usage error, said as the command itself would
// be (unknown command "bogus" for "agentspec"): cobra's help command
// printed "Unknown help topic" and the root's usage, with status 0.
func refuseUnknownHelpTopics(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		help := c.Run
		c.Run = nil
		c.RunE = func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 && target.HasSubCommands() { // help cache stat
				return unknownCommand(target, rest[0])
			}
			help(cmd, args)
			return nil
		}
	}
}

// showUsageOnUsageErrors makes a wrong number of arguments, and a flag that
// cannot be read, say how the command is used and where its help is: with
// SilenceUsage, cobra said only "accepts 1 arg(s), received 0", which does
// not tell a newcomer which argument. A command with subcommands keeps its
// own words for an unknown one.
func showUsageOnUsageErrors(root *cobra.Command) {
	withUsage := func(cmd *cobra.Command, err error) error {
		// A word before the flag that names no subcommand is what went
		// wrong (agentspec validat spec.yaml --model test): the flag is
		// one of the command meant, which the parent lacks.
		if words := cmd.Flags().Args(); cmd.HasSubCommands() && len(words) > 0 {
			return unknownCommand(cmd, words[0])
		}
		return fmt.Errorf("%w (%susage: %s; see %s --help)", err, flagHint(cmd, err), cmd.UseLine(), cmd.CommandPath())
	}
	root.SetFlagErrorFunc(withUsage)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil && !c.HasSubCommands() {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return withUsage(cmd, err)
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagHint is what to say first of err, when it is a flag cmd does not
// have: the flag it most likely misspells, "did you mean --model?; ", or
// for a long flag written with one dash, which pflag reads as shorthands
// (-var as -v and an unknown -a), that its name takes two. It is "" for
// any other error.
func flagHint(cmd *cobra.Command, err error) string {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) {
		return ""
	}
	var names []string
	shorthands := map[rune]bool{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
			if f.Shorthand != "" {
				shorthands[rune(f.Shorthand[0])] = true
			}
		}
	})
	group, _, _ := strings.Cut(unknown.GetSpecifiedShortnames(), "=")
	if group == "" { // --name
		if near := suggest.Closest(unknown.GetSpecifiedName(), names); near != "" {
			return "did you mean --" + near + "?; "
		}
		return ""
	}
	// The shorthands pflag read before the unknown one were the long
	// name's first letters.
	for _, name := range names {
		read, ok := strings.CutSuffix(name, group)
		if !ok || len(name) < 2 {
			continue
		}
		known := true
		for _, r := range read {
			known = known && shorthands[r]
		}
		if known {
			return "did you mean --" + name + "? a flag's name takes two dashes; "
		}
	}
	return ""
}

// signalEndsCleanly, as a command's annotation, marks a command for which a
// signal is the ordinary way to stop (a server): it then exits as it would
// at the end of its input, not with 128 plus the signal.
const signalEndsCleanly = "agentspec/signal-ends-cleanly"

// secondSignalLeaves, as a command's annotation, says what a second signal,
// which ends the command during the clean stop the first began, leaves
// undone.
const secondSignalLeaves = "agentspec/second-signal-leaves"

// leftUndone is what a second signal leaves undone of cmd's clean stop.
func leftUndone(cmd *cobra.Command) string {
	if cmd != nil && cmd.Annotations[secondSignalLeaves] != "" {
		return cmd.Annotations[secondSignalLeaves]
	}
	return "what the command was doing is not waited for"
}

// signalWord names what sig did to the command: "interrupted" for SIGINT
// (Ctrl-C), "terminated" for SIGTERM.
func signalWord(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "terminated"
	}
	return "interrupted"
}

// signalNumber is sig's number: 2 for SIGINT, 15 for SIGTERM.
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return int(syscall.SIGINT)
}

type transportKey struct{}

// WithHTTPTransport returns a context with which Main has the spec's
// capabilities reach their remote servers (an MCP server named by url)
// through rt instead of http.DefaultTransport: for a program that embeds
// the CLI behind a proxy, or a test standing a local server in for a
// spec's host. The capabilities themselves get it in their Setup.
func WithHTTPTransport(ctx context.Context, rt http.RoundTripper) context.Context {
	return context.WithValue(ctx, transportKey{}, rt)
}

// capabilityTransport is what WithHTTPTransport put in ctx, or nil.
func capabilityTransport(ctx context.Context) http.RoundTripper {
	rt, _ := ctx.Value(transportKey{}).(http.RoundTripper)
	return rt
}

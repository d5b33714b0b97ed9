// Package mcp is the MCP capability: the tools of a Model Context Protocol
// server, offered to the model as they are.
//
// A spec names a remote server by url (streamable HTTP, falling back to the
// older HTTP+SSE transport where that is all the server speaks) or starts a
// local one with command (stdio). When the capability is built, at the start
// of a run or of `agentspec tools`, the server is started or reached and its
// tools are listed; their names, descriptions and input schemas go to the
// model unchanged (but for the schema forms providers refuse, see
// providerSchema), filtered by allowed_tools. A server that announces its
// tools changed (notifications/tools/list_changed) has them listed again
// when they are next asked for, which the run does before each request to
// the model (capabilities.ToolsChanger), and `agentspec mcp` as soon as it
// is told (capabilities.ToolsWatcher). Nothing is started when a spec is
// only validated.
//
// A result the server flags isError is a *capabilities.RetryError: the model
// reads it and may correct its call. Content is turned into text, the only
// thing a tool result carries here: text as it is, embedded text resources
// with their URI, and a bracketed note for what cannot be passed on (images,
// audio, binary resources), which the CallResultEvent lists as dropped. A
// protocol error, or a server that exits or cannot be reached during a call,
// is fatal and ends the run; a server is not restarted. A remote server
// that no longer knows the session (it restarted: streamable HTTP's 404) is
// given a new one, and the call is made again in it, once; Close gives up
// a new session still starting rather than waiting for it.
//
// What a server sends is bounded (limits.go): one message from a server
// by MaxMessageBytes, past which the call or the start fails with
// ErrMessageTooLarge and the server is not spoken to again; the text of one
// result by MaxResultBytes, past which the model gets a retry asking for
// less. One call waits read_timeout (DefaultReadTimeout) for its answer,
// also when a local server that stopped reading has not taken its request;
// until it does, later calls are refused as correctable errors (tool.go).
// A call given up on (the read timeout, an interrupted run, Close) is
// cancelled on the server with notifications/cancelled (cancel.go).
//
// Messages and events name a server by its id and by where it is, shown
// without what may be secret: a URL without its query ("https://h/mcp?…"),
// password or path segments that may be tokens ("https://h/mcp/…", see
// redact.Word), a command as its program ("npx …"). Text from elsewhere in
// an error (the SDK's, a local server's stderr) has the spec's secret
// values (see Options.redactor) replaced by "…".
//
// A local server runs in its own process group. Close, which the run calls
// however it ends (Ctrl-C included), closes its stdin, waits briefly, and
// then kills the whole group, so no process of the group outlives the run;
// a descendant that leaves the group (setsid, setpgid) is not reached, as
// only a cgroup would reach it. It is started through internal/childproc, so it cannot read
// agentspec's environment (the provider keys) or memory through /proc; its
// own environment is a small inherited set plus env.
//
// Each call emits a CallRequestEvent, which a listener may veto, and a
// CallResultEvent. The CLI's --approve does not apply to MCP calls: it only
// asks about FileSystem changes.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/argmax"
	"github.com/agentspec/agentspec/internal/redact"
)

// TypeName is the capability's name in specs.
const TypeName = "MCP"

// DefaultTimeout bounds start-up: starting or reaching the server, the
// initialize handshake and listing its tools.
const DefaultTimeout = 30 * time.Second

// Options configure an MCP capability; the JSON names are the spec's keys.
// Exactly one of URL and Command is set.
type Options struct {
	URL                string            `json:"url,omitempty"`
	Local              any               `json:"local,omitempty"`  // nil, true or a URL string
	Native             *bool             `json:"native,omitempty"` // accepted; the loader warns it has no effect
	Headers            map[string]string `json:"headers,omitempty"`
	AuthorizationToken string            `json:"authorization_token,omitempty"`
	Command            []string          `json:"command,omitempty"`
	Env                map[string]string `json:"env,omitempty"`
	Cwd                string            `json:"cwd,omitempty"`
	// AllowedTools keeps only these tools; nil keeps them all.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// Timeout is in seconds; zero means DefaultTimeout.
	Timeout float64 `json:"timeout,omitempty"`
	// ReadTimeout bounds one tool call, in seconds; zero means
	// DefaultReadTimeout.
	ReadTimeout float64 `json:"read_timeout,omitempty"`
	ID          string  `json:"id,omitempty"`
	Description string  `json:"description,omitempty"`
}

// Capability is a connected MCP server and the tools it offers.
type Capability struct {
	id          string
	where       string            // the program or the URL, without arguments or query, for messages
	redact      *strings.Replacer // hides the spec's secrets in text from elsewhere
	guard       *bodyGuard        // the server's bound on messages
	readTimeout time.Duration
	proc        *process // nil for a remote server, or a local one that did not start
	local       bool

	mu      sync.Mutex
	session *sdk.ClientSession
	cancel  context.CancelFunc // ends a remote connection's background work
	// reconnect starts a new session with a remote server, for one whose
	// session the server no longer knows (it restarted); nil for a local
	// server.
	reconnect func(context.Context) (*sdk.ClientSession, context.CancelFunc, error)
	// renewing is the new session a call is starting, which other calls
	// wait for (under mu); nil when none is.
	renewing *renewal
	reach    capabilities.Reach

	// The tools are listed again once the server has announced that they
	// changed (notifications/tools/list_changed), or a new session was
	// started: changed counts those, listed is its count when they were
	// last listed.
	allowed     []string // allowed_tools; nil for all
	readOnly    bool     // only the tools the server marks readOnlyHint
	listTimeout time.Duration
	changed     atomic.Uint64
	changedMu   sync.Mutex
	changedCh   chan struct{} // closed, and replaced, when changed moves
	toolsMu     sync.Mutex
	listed      uint64
	tools       []capabilities.Tool
	// awaitingRead is the write of a server that stopped reading whose
	// end moves ToolsVersion on (changeOnceRead).
	awaitingRead <-chan struct{}

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	// life ends when Close is called, and with it the calls under way
	// and the start of a new session.
	lifeOnce sync.Once
	life     context.Context
	endLife  context.CancelFunc
}

// renewal is the start of a new session with a remote server.
type renewal struct {
	done chan struct{}
	err  error // once done is closed
	// given up: the call starting it ended first, which says nothing of
	// the server, so another call waiting for it starts one itself.
	givenUp bool
}

var (
	_ capabilities.Capability   = (*Capability)(nil)
	_ capabilities.ToolsWatcher = (*Capability)(nil)
)

// Sentinels a caller can test fatal call errors against.
var (
	// ErrServerExited is wrapped by the error of a call to a local server
	// that exited.
	ErrServerExited = errors.New("the MCP server exited")
	// ErrClosed is wrapped by the error of a call made after Close.
	ErrClosed = errors.New("the MCP capability is closed")
)

// New starts or reaches the server, initializes a session and lists its
// tools. setup.Dir is the directory a relative cwd resolves against (empty:
// the process's working directory); with setup.CheckOnly, only the options
// are checked, cwd's directory among them. Errors about one option are
// *capabilities.ArgError. On error nothing is left running.
func New(ctx context.Context, opts Options, setup capabilities.Setup) (*Capability, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	timeout := DefaultTimeout
	if opts.Timeout > 0 {
		timeout = capabilities.Seconds(opts.Timeout)
	}
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	c := &Capability{id: opts.ID, redact: opts.redactor(), allowed: opts.AllowedTools, readOnly: setup.ReadOnly,
		listTimeout: timeout}
	var dir string
	if len(opts.Command) > 0 {
		// Where the server will run, found before anything starts: it is
		// what the capability reaches, also when built to be checked.
		var err error
		if dir, err = serverDir(opts.Cwd, setup.Dir); err != nil {
			return nil, err
		}
		// The environment it starts with, the workspace's env in it, must
		// fit beside its command line: exec refuses more.
		withEnv := opts
		withEnv.Env = withWorkspaceEnv(opts.Env, setup.Env)
		if err := capabilities.CheckEnvSize(argmax.Size(execPath(withEnv, dir), opts.Command, serverEnv(withEnv.Env))); err != nil {
			return nil, err
		}
	}
	c.reach = reachOf(opts, opts.endpoint(), dir)
	if opts.ReadTimeout > 0 {
		c.readTimeout = capabilities.Seconds(opts.ReadTimeout)
	}
	// The id is known before the server is started: a capability built to
	// be checked is named as the started one will be.
	if len(opts.Command) > 0 {
		c.where, c.local = commandWhere(opts.Command), true
		if c.id == "" {
			c.id = commandID(opts.Command)
		}
	} else {
		c.where = redact.URL(opts.endpoint())
		if c.id == "" {
			c.id = defaultID(opts.endpoint())
		}
	}
	if setup.CheckOnly {
		return c, nil // built to be checked: the options, cwd's directory among them, were all there is to check
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "agentspec", Version: "1"}, &sdk.ClientOptions{
		// No roots: agentspec has no use for the server's view of them.
		Capabilities: &sdk.ClientCapabilities{},
		// The tools are listed again when they are next asked for.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.toolsChanged() },
	})
	var err error
	settled := func() bool { return true } // a local server's start has no requests to end
	c.guard = &bodyGuard{limit: MaxMessageBytes}
	if c.local {
		// The workspace's env reaches every command started in it (a
		// LocalWorkspace's); the entry's own env wins over it.
		withEnv := opts
		withEnv.Env = withWorkspaceEnv(opts.Env, setup.Env)
		c.session, c.proc, err = connectStdio(startCtx, client, withEnv, setup.Dir, c.guard)
	} else {
		u, headers, base := opts.endpoint(), opts.httpHeaders(), setup.HTTPTransport()
		c.reconnect = func(ctx context.Context) (*sdk.ClientSession, context.CancelFunc, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			abort, settle := abortedWith(ctx)
			session, end, err := connectHTTP(ctx, client, u, headers, &abortTransport{abort: abort, base: base}, c.guard)
			if !settle() && err == nil { // ctx ended as it connected: the session's requests are cut off
				_ = closeWithin(session, closeWait)
				end()
				return nil, nil, context.Cause(ctx)
			}
			return session, end, err
		}
		abort, settle := abortedWith(startCtx)
		settled = settle
		c.session, c.cancel, err = connectHTTP(startCtx, client, u, headers, &abortTransport{abort: abort, base: base}, c.guard)
	}
	if err != nil {
		return nil, c.startError(ctx, startCtx, timeout, err)
	}
	err = c.listTools(startCtx)
	if err == nil && !settled() {
		err = context.Cause(startCtx) // it ended as the tools came: the session's requests are cut off
	}
	if err != nil {
		err = c.startError(ctx, startCtx, timeout, err) // before Close, which ends the process
		c.Close()
		return nil, err
	}
	return c, nil
}

// abortedWith is a context that ends once ctx does, until settle is
// called: a start's requests, and what the SDK still sends once it gave it
// up, end with the start (the SDK would otherwise wait up to 5 seconds
// more to tell a server that does not answer that it gave up on its
// initialize), but not those of the session it started. settle reports
// whether it came before ctx ended.
func abortedWith(ctx context.Context) (abort context.Context, settle func() bool) {
	abort, end := context.WithCancelCause(context.Background())
	return abort, context.AfterFunc(ctx, func() { end(context.Cause(ctx)) })
}

// startError says why start-up failed, naming the server, with the last
// lines of a local server's stderr.
func (c *Capability) startError(ctx, startCtx context.Context, timeout time.Duration, err error) error {
	var argErr *capabilities.ArgError
	if errors.As(err, &argErr) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err() // the run was interrupted: not the server's fault
	}
	if tooLarge := c.guard.tripped(); tooLarge != nil {
		err = tooLarge
	}
	msg := c.scrub(err.Error())
	timedOut := errors.Is(startCtx.Err(), context.DeadlineExceeded)
	if timedOut {
		msg = fmt.Sprintf("no answer within %s (the timeout option)", timeout)
	}
	if c.local {
		if c.proc == nil {
			return c.errorf(err, "MCP server %s (%s) did not start: %s", c.id, c.where, msg)
		}
		if exited, status := c.proc.exitStatus(); exited && !timedOut {
			msg = fmt.Sprintf("it exited before it was ready (%s)", status)
		}
		return c.errorf(err, "MCP server %s (%s) did not start: %s%s", c.id, c.where, msg, c.scrub(c.proc.stderrTail()))
	}
	return c.errorf(err, "MCP server %s (%s) could not be reached: %s", c.id, c.where, msg)
}

// scrub hides the spec's secrets in s (see Options.redactor).
func (c *Capability) scrub(s string) string {
	if c.redact == nil {
		return s
	}
	return c.redact.Replace(s)
}

// callTimeout is how long one tool call may take.
func (c *Capability) callTimeout() time.Duration {
	if c.readTimeout <= 0 {
		return DefaultReadTimeout
	}
	return c.readTimeout
}

// errorf is an error with the formatted message that wraps err, whose own
// message, which may hold a secret of the spec, it does not show.
func (c *Capability) errorf(err error, format string, args ...any) error {
	return &redactedError{msg: fmt.Sprintf(format, args...), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// listTools lists the server's tools, filtered by allowed_tools and, in a
// read-only workspace, to those the server marks readOnlyHint, as
// `agentspec mcp --read-only` offers them. A name allowed_tools gives that
// the server does not offer is an error.
func (c *Capability) listTools(ctx context.Context) error {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	listed := c.changed.Load() // before the listing, so that a change during it is seen
	all, err := c.serverTools(ctx, c.currentSession())
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	if c.allowed != nil {
		var missing []string
		for _, name := range c.allowed {
			if !slices.ContainsFunc(all, func(t *sdk.Tool) bool { return t.Name == name }) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			names := make([]string, 0, len(all))
			for _, t := range all {
				names = append(names, t.Name)
			}
			sort.Strings(names)
			return capabilities.ArgErrorf("allowed_tools", "allowed_tools names %s, which MCP server %s does not offer; it offers: %s",
				strings.Join(missing, ", "), c.id, strings.Join(names, ", "))
		}
	}
	c.tools, c.listed = c.offered(all), listed
	return nil
}

// offered are the tools of all the model is offered: those allowed_tools
// names, and in a read-only workspace those marked readOnlyHint.
func (c *Capability) offered(all []*sdk.Tool) []capabilities.Tool {
	var tools []capabilities.Tool
	seen := map[string]bool{}
	for _, t := range all {
		// A name listed twice is one tool: a call names it, and the server
		// answers with the one it has. The first listing stands, its hints
		// with it.
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		if c.allowed != nil && !slices.Contains(c.allowed, t.Name) ||
			c.readOnly && (t.Annotations == nil || !t.Annotations.ReadOnlyHint) {
			continue
		}
		tools = append(tools, newTool(c, t))
	}
	return tools
}

// serverTools lists the tools session's server offers, giving up when ctx
// ends though the request is still being written to a local server that
// stopped reading, as callTool does.
func (c *Capability) serverTools(ctx context.Context, session *sdk.ClientSession) ([]*sdk.Tool, error) {
	type answer struct {
		tools []*sdk.Tool
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		var all []*sdk.Tool
		for t, err := range session.Tools(ctx, nil) {
			if err != nil {
				done <- answer{nil, err}
				return
			}
			all = append(all, t)
		}
		done <- answer{all, nil}
	}()
	select {
	case a := <-done:
		return a.tools, a.err
	case <-ctx.Done():
		select {
		case a := <-done:
			return a.tools, a.err
		default:
		}
		if c.proc != nil {
			c.proc.stdin.abandon(abandonedRequest)
		}
		return nil, ctx.Err()
	}
}

// Tools returns the server's tools, filtered by allowed_tools, in the order
// the server listed them. Once the server has announced that they changed,
// they are listed again first, within the timeout option: a tool
// allowed_tools names that the server no longer offers is then left out.
// A local server that stopped reading is not asked: its tools stay as
// they were until it reads again.
func (c *Capability) Tools(ctx context.Context) ([]capabilities.Tool, error) {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	if c.listed != c.changed.Load() && !c.closed.Load() {
		var stuck <-chan struct{}
		if c.proc != nil {
			stuck = c.proc.stdin.stuck()
		}
		if stuck != nil {
			c.changeOnceRead(stuck)
		} else if err := c.relist(ctx); err != nil {
			return nil, err
		}
	}
	return slices.Clone(c.tools), nil
}

// changeOnceRead moves ToolsVersion on once stuck, the write a local
// server that stopped reading has yet to read, ends: its tools, not listed
// again while it did not read, are given as they were, which whoever asked
// takes for those of the version it read first. Under toolsMu.
func (c *Capability) changeOnceRead(stuck <-chan struct{}) {
	if c.awaitingRead == stuck {
		return
	}
	c.awaitingRead = stuck
	go func() {
		<-stuck // the server read it, or Close closed the pipe
		c.toolsChanged()
	}()
}

// ToolsVersion changes when the server announces that its tools changed,
// or a new session is started with it (capabilities.ToolsChanger).
func (c *Capability) ToolsVersion() uint64 { return c.changed.Load() }

// ToolsChanged returns a channel closed when ToolsVersion next changes
// (capabilities.ToolsWatcher).
func (c *Capability) ToolsChanged() <-chan struct{} {
	c.changedMu.Lock()
	defer c.changedMu.Unlock()
	if c.changedCh == nil {
		c.changedCh = make(chan struct{})
	}
	return c.changedCh
}

// toolsChanged moves ToolsVersion on, and tells whoever waits on
// ToolsChanged.
func (c *Capability) toolsChanged() {
	c.changedMu.Lock()
	defer c.changedMu.Unlock()
	c.changed.Add(1)
	if c.changedCh != nil {
		close(c.changedCh)
		c.changedCh = nil
	}
}

// relist lists the server's tools again, under toolsMu.
func (c *Capability) relist(ctx context.Context) error {
	listed := c.changed.Load()
	listCtx, cancel := context.WithTimeout(ctx, c.listTimeout)
	defer cancel()
	// Close ends the listing, as it ends a call (see tool.Call).
	listCtx, closing := context.WithCancelCause(listCtx)
	defer closing(nil)
	defer context.AfterFunc(c.lifeCtx(), func() { closing(ErrClosed) })()
	all, err := c.serverTools(listCtx, c.currentSession())
	if err != nil {
		const what = "listing its tools again, as it announced they changed"
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case errors.Is(context.Cause(listCtx), ErrClosed):
			return c.errorf(ErrClosed, "MCP server %s (%s): %s: %s", c.id, c.where, what, ErrClosed)
		case c.guard.tripped() != nil:
			err = c.guard.tripped()
			return c.errorf(err, "MCP server %s (%s): %s: %s", c.id, c.where, what, err)
		case errors.Is(listCtx.Err(), context.DeadlineExceeded):
			return c.errorf(err, "MCP server %s (%s): %s: no answer within %s (the timeout option)", c.id, c.where, what, c.listTimeout)
		}
		if c.proc != nil {
			if exited, status := c.proc.exitStatus(); exited {
				return fmt.Errorf("%w: MCP server %s (%s) exited (%s)%s", ErrServerExited, c.id, c.where, status, c.scrub(c.proc.stderrTail()))
			}
		}
		return c.errorf(err, "MCP server %s (%s): %s: %s", c.id, c.where, what, c.scrub(err.Error()))
	}
	c.tools, c.listed = c.offered(all), listed
	return nil
}

// Remote reports that the tools live on a server, so listing them means
// connecting: validate builds the capability without connecting and does
// not ask for them.
func (c *Capability) Remote() bool { return true }

// ID returns the server's id.
func (c *Capability) ID() string { return c.id }

// PID returns the process id of a local server, or 0 for a remote one.
func (c *Capability) PID() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.pid()
}

// Close ends the session and, for a local server, stops its process and
// every process in its group. It is safe to call more than once.
func (c *Capability) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		// The calls under way, and a new session being started, are
		// given up, not waited for: each call ends what it started (see
		// Call and renew).
		c.lifeCtx()
		c.endLife()
		var errs []error
		// A local server is stopped first: the session's Close waits for
		// calls under way, and a server that hangs in one would hold it.
		if c.proc != nil {
			if err := c.proc.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		c.mu.Lock()
		session, cancel := c.session, c.cancel
		c.mu.Unlock()
		if session != nil {
			if err := closeWithin(session, closeWait); err != nil && c.proc == nil {
				// A local server's session error is its exit.
				errs = append(errs, err)
			}
		}
		if cancel != nil {
			cancel()
		}
		if len(errs) > 0 {
			c.closeErr = fmt.Errorf("MCP server %s: %w", c.id, errors.Join(errs...))
		}
	})
	return c.closeErr
}

// currentSession is the session calls are made in.
func (c *Capability) currentSession() *sdk.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// lifeCtx is a context Close ends.
func (c *Capability) lifeCtx() context.Context {
	c.lifeOnce.Do(func() { c.life, c.endLife = context.WithCancel(context.Background()) })
	return c.life
}

// renew starts a new session with a remote server that no longer knows
// old, unless another call has done so already, and returns it; while one
// call starts it, the others that need it wait. The streamable HTTP
// transport says a client must start one when a request in its session is
// answered 404: the server restarted, or ended the session.
//
// c.mu is not held while the session starts, which takes up to the
// timeout option with a server slow to answer: Close ends the start at
// once, and the calls waiting for it are told ErrClosed.
func (c *Capability) renew(ctx context.Context, old *sdk.ClientSession) (*sdk.ClientSession, error) {
	for {
		c.mu.Lock()
		if c.session != old {
			session := c.session
			c.mu.Unlock()
			return session, nil
		}
		if c.closed.Load() {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if r := c.renewing; r != nil {
			c.mu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if r.err != nil && !r.givenUp {
				return nil, r.err
			}
			continue
		}
		r := &renewal{done: make(chan struct{})}
		c.renewing = r
		c.mu.Unlock()
		return c.startRenewal(ctx, old, r)
	}
}

// startRenewal starts r, the new session that replaces old, and tells
// the calls waiting for it.
func (c *Capability) startRenewal(ctx context.Context, old *sdk.ClientSession, r *renewal) (*sdk.ClientSession, error) {
	// Close ends the start, and every request of it (see abortedWith);
	// once started, Close ends the new session as it ends any.
	startCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(c.lifeCtx(), func() { cancel(ErrClosed) })
	defer stop()
	session, end, err := c.reconnect(startCtx)

	c.mu.Lock()
	c.renewing = nil
	closed := c.closed.Load()
	switch {
	case closed:
		// Close has ended the session it found, not this one.
		err = ErrClosed
	case err == nil:
		// The old session is gone on the server; ending it here sends
		// nothing.
		go old.Close()
		if c.cancel != nil {
			c.cancel()
		}
		c.session, c.cancel = session, end
	}
	r.err, r.givenUp = err, err != nil && !closed && ctx.Err() != nil
	c.mu.Unlock()
	close(r.done)

	if err != nil {
		if session != nil {
			_ = closeWithin(session, closeWait)
			end()
		}
		return nil, err
	}
	c.toolsChanged() // the server restarted, and may offer other tools
	return session, nil
}

// closeWait bounds how long Close waits for a remote session to end.
const closeWait = 5 * time.Second

func closeWithin(s *sdk.ClientSession, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("the session did not close within %s", d)
	}
}

// withWorkspaceEnv is a local server's env: the workspace's (a
// LocalWorkspace's), the entry's own over it.
func withWorkspaceEnv(own, workspace map[string]string) map[string]string {
	if len(workspace) == 0 {
		return own
	}
	env := maps.Clone(workspace)
	maps.Copy(env, own)
	return env
}

func (o *Options) check() error {
	switch l := o.Local.(type) {
	case nil:
	case bool:
		if !l {
			return capabilities.ArgErrorf("local", "local: false leaves only a provider-native server, which agentspec does not offer; remove it")
		}
	case string:
		if !isHTTPURL(l) {
			return capabilities.ArgErrorf("local", "local must be true or an http:// or https:// URL, got %q", redact.URL(l))
		}
	default:
		return capabilities.ArgErrorf("local", "local must be true or a URL")
	}
	switch {
	case len(o.Command) == 0 && o.URL == "":
		return errors.New("either url or command is required")
	case len(o.Command) > 0 && o.URL != "":
		return errors.New("url and command cannot both be given")
	case len(o.Command) > 0 && o.Command[0] == "":
		return capabilities.ArgErrorf("command", "command: the program name is empty")
	case o.URL != "" && !isHTTPURL(o.URL):
		return capabilities.ArgErrorf("url", "url must be an http:// or https:// URL, got %q", redact.URL(o.URL))
	}
	return capabilities.CheckEnv(o.Env)
}

func (o *Options) httpHeaders() map[string]string {
	h := map[string]string{}
	for k, v := range o.Headers {
		h[k] = v
	}
	if o.AuthorizationToken != "" {
		h["Authorization"] = o.AuthorizationToken
	}
	return h
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) && u.Host != ""
}

// defaultID is pydantic-ai's: the host and the last path segment, but for
// a segment messages do not show (see redact.Word): the id is in every
// message and event, so it is the host and the last segment shown.
func defaultID(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	id := u.Hostname()
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i] != "" && redact.Word(segs[i]) {
			return id + "-" + segs[i]
		}
	}
	return id
}

// endpoint is the URL a remote server is reached at: url, or the local
// stand-in pydantic-ai's local option names.
func (o Options) endpoint() string {
	if s, ok := o.Local.(string); ok {
		return s
	}
	return o.URL
}

// commandWhere is a command as messages show it: the program, its
// arguments elided ("npx …"), since one may be a key.
func commandWhere(argv []string) string {
	if len(argv) == 1 {
		return argv[0]
	}
	return argv[0] + " …"
}

// minSecret is the shortest value redactor hides: shorter ones ("-y",
// "1", "true") are rarely secret and too often part of other words.
const minSecret = 6

// redactor hides, in text agentspec did not write (an error of the SDK or
// of Go's HTTP client, which names the URL with its query; a server's
// stderr, which may echo its arguments), what of the spec may be secret:
// the URL's query, password and path segments that may be tokens, the
// command's arguments, the values of env
// variables named like secrets, the headers and the authorization token.
func (o *Options) redactor() *strings.Replacer {
	var secrets []string
	add := func(s string) {
		if len(s) >= minSecret {
			secrets = append(secrets, s)
		}
	}
	for _, raw := range []string{o.URL, localURL(o.Local)} {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		add(u.RawQuery)
		_, hidden := redact.Path(u)
		for _, seg := range hidden {
			add(seg)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
				add(url.QueryEscape(v))
			}
		}
		if p, ok := u.User.Password(); ok {
			add(p)
			add(url.QueryEscape(p))
		}
	}
	for _, a := range o.Command[min(1, len(o.Command)):] {
		if _, v, ok := strings.Cut(a, "="); ok {
			add(v) // --api-key=KEY
		}
		if !strings.HasPrefix(a, "-") {
			add(a) // a flag's name is no secret; its value, the next argument, may be
		}
	}
	for k, v := range o.Env {
		if secretName(k) {
			add(v)
		}
	}
	for _, v := range o.Headers {
		add(v)
	}
	add(o.AuthorizationToken)
	add(strings.TrimPrefix(o.AuthorizationToken, "Bearer "))
	// Longest first, so that a secret is hidden whole and not around a
	// shorter one inside it.
	slices.SortFunc(secrets, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range slices.Compact(secrets) {
		pairs = append(pairs, s, "…")
	}
	return strings.NewReplacer(pairs...)
}

// secretName reports whether an environment variable's name says it holds
// a secret (OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD); the values of others
// (a config path, a log level) are left in messages, where they help.
func secretName(k string) bool {
	k = strings.ToUpper(k)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASS", "AUTH", "CRED", "COOKIE", "SESSION"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

func localURL(local any) string {
	s, _ := local.(string)
	return s
}

// runners are programs that start the server named by a later argument.
var runners = []string{"npx", "bunx", "pnpx", "uvx", "pipx", "uv", "node", "deno", "bun", "python", "python3", "npm", "pnpm", "yarn", "go", "docker", "podman"}

// commandID names a local server: the program, or for a runner such as npx
// the package it runs, without scope or version
// ("@modelcontextprotocol/server-everything@1.0" is "server-everything").
func commandID(argv []string) string {
	prog := filepath.Base(argv[0])
	if !slices.Contains(runners, strings.TrimSuffix(prog, ".exe")) {
		return prog
	}
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") || slices.Contains([]string{"run", "exec", "dlx", "x", "tool"}, a) {
			continue
		}
		if strings.ContainsAny(a, "?=") || strings.Contains(a, "://") {
			continue // a URL or an assignment, which may hold a token
		}
		if strings.ContainsRune(a, filepath.Separator) && !strings.HasPrefix(a, "@") {
			if id := scriptID(a); id != "" {
				return id
			}
			continue
		}
		a = a[strings.LastIndex(a, "/")+1:]
		if i := strings.LastIndex(a, "@"); i > 0 {
			a = a[:i]
		}
		if a != "" {
			return a
		}
	}
	return prog
}

// scriptID names a server run from a script path by the package that holds
// it: ".../server-everything/dist/index.js" is "server-everything".
func scriptID(p string) string {
	p = filepath.Clean(p)
	name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
	generic := []string{"index", "main", "server", "__main__", "cli", "dist", "build", "lib", "src", "bin", "out"}
	for slices.Contains(generic, name) {
		p = filepath.Dir(p)
		if p == "." || p == string(filepath.Separator) {
			return ""
		}
		name = filepath.Base(p)
	}
	return name
}

// Type is the MCP capability type, for a program to register
// (capabilities/builtin lists it with the other built-in types).
func Type() capabilities.Type {
	return capabilities.Type{
		Name:        TypeName,
		Description: "The tools of an MCP server: a remote one by url (streamable HTTP or SSE) or a local one started with command (stdio).",
		Schema:      json.RawMessage(optionsSchema),
		Positional:  "url",
		NoEffect: map[string]string{
			"native": "agentspec connects to the server itself and offers its tools as its own; it does not also hand the server to the provider",
		},
		New: func(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
			var opts Options
			if err := args.Decode(&opts); err != nil {
				return nil, err
			}
			if f, ok := opts.Local.(json.Number); ok {
				opts.Local = f.String() // refused by check, with its message
			}
			return New(ctx, opts, args.Setup)
		},
	}
}

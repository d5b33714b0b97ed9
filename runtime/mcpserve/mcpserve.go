// Package mcpserve serves the tools of agentspec capabilities to MCP
// clients (editors, desktop assistants, other agent runtimes), over stdio or
// streamable HTTP, on the official Go MCP SDK.
//
// A client sees exactly what a run offers a model: the same tool names,
// descriptions and input schemas, and the same result text. A correctable
// error (a capabilities.RetryError, arguments that are not a JSON object) is
// a result with isError set whose text is the message a run's model reads
// after its "Error: " prefix; MCP has an error flag, so the prefix is not
// repeated. A fatal error (a full disk, a listener that failed) is a
// JSON-RPC error, so a client knows the call did not merely go wrong; its
// message names no path of this machine outside the paths the capabilities
// reach, and the whole error goes to the ToolResult event and
// Options.Notice.
//
// Calls are handled concurrently, as the SDK dispatches them, so the tools
// must be safe for concurrent use, as they must be for parallel runs. Every call goes through the Listener with a call id of its own,
// as in a run: the capabilities' events, and a runtime.ToolCall and
// runtime.ToolResult around each call (Round is 0: there are no rounds).
// A call its client cancels is no failure: its ToolResult's Status is
// runtime.ToolCancelled, and Notice is not told. Nor is a call cut off as
// serving ends, once its grace has passed: its Status is ToolCancelled
// too, and Notice is told it was cancelled as the server shut down.
//
// A spec's capabilities whose tools live behind the network (an MCP server,
// which npx may take half a minute to fetch) can be started in the
// background (StartingLater): the server answers initialize and serves the
// other tools at once, and theirs join when they are up, announced with
// notifications/tools/list_changed.
//
// A capability whose tools change while it is served (a
// capabilities.ToolsChanger, as an MCP server's are when it announces a new
// list) has them served as they change, checked as at the start, and its
// clients are sent notifications/tools/list_changed: at once when it is a
// capabilities.ToolsWatcher, otherwise when a client next lists the tools
// or calls one not offered.
package mcpserve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// Options configure a Server.
type Options struct {
	// Name and Version are what the server tells clients it is; default
	// "agentspec" and "devel".
	Name, Version string
	// ReadOnly offers only the tools whose hints say they change nothing
	// (capabilities.HintsOf), whatever wraps their capability; any other
	// tool is withheld, since nothing says it is harmless.
	ReadOnly bool
	// Listener receives the events of every call; nil emits none.
	Listener capabilities.Listener
	// Registry builds a spec's capabilities in Open; nil means
	// capabilities.Default().
	Registry *capabilities.Registry
	// Transport is how the spec's capabilities reach remote servers in
	// Open; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Notice receives the lines of the server's own log: one for each
	// capability started in the background (see StartingLater) once it is
	// settled, its tools joined or why it did not start, and one for each
	// call that failed fatally, with its whole error (which the client is
	// sent without the paths outside the served roots); none for a call
	// its client cancelled, and one saying so for a call cut off as
	// serving ended; and for a capability that changed its tools, one
	// saying which joined or were withdrawn, and one for each tool left
	// out, saying why. Nil drops them.
	Notice func(string)
	// Session, when set, builds capabilities of a client session's own
	// (an HTTP client's: stdio has one), at its first call: its calls go
	// to the tool of the same name among them, so that what one client's
	// FileSystem was shown (the hashes its writes are checked against,
	// what RequireReadBeforeWrite asks for) is not taken for another's. A
	// tool they do not offer (an MCP server's that joined late) is served
	// by the capabilities given to New. They are closed when the session
	// ends, or with the server. Its context carries the Listener and the
	// session's id (runtime.WithSessionID), but no call: what they emit
	// while built is the session's.
	Session func(context.Context) ([]capabilities.Capability, error)
}

// Server serves a set of tools. It is safe for concurrent use.
type Server struct {
	srv      *sdk.Server
	caps     []capabilities.Capability
	listener capabilities.Listener
	readOnly bool
	notice   func(string)
	session  func(context.Context) ([]capabilities.Capability, error)
	calls    atomic.Int64
	// roots are the paths the capabilities reach, which a fatal error's
	// message may name to the client (callFailed).
	roots []string

	mu      sync.Mutex
	sources []*source          // in the order their tools joined
	owner   map[string]*source // every tool name, withheld ones included
	// withdrawn are the tools a capability offered and withdrew since,
	// and how it is named, for the answer to a call of one.
	withdrawn map[string]string
	late      []*lateStart
	settled   chan struct{} // closed, and replaced, when one of late settles
	sessions  map[*sdk.ServerSession]*sessionCaps
	closed    bool

	stop context.CancelFunc // ends the waits for late starts, and for changes
	wg   sync.WaitGroup
	// relistRetry is how long a follow goroutine waits before it lists
	// again the tools of a capability whose listing failed, in
	// nanoseconds (relistRetryAfter; tests shorten it).
	relistRetry atomic.Int64

	// grace is how long calls under way may go on once serving ends
	// before they are cancelled (shutdownGrace).
	grace time.Duration
	// idle is how long Serve keeps a connection idle between requests
	// (idleTimeout).
	idle     time.Duration
	cmu      sync.Mutex
	inflight map[*inflightCall]struct{}

	// answers are the streams of the calls under way over HTTP (see
	// withoutCancelledAnswers).
	amu     sync.Mutex
	answers map[httpCall]*answerStream
}

// idleTimeout is how long Serve keeps a connection open between two
// requests: long enough for a client's next call to reuse it, and a peer
// without the token, refused, cannot hold connections for ever. A stream
// (an answer's, or a client's for notifications) is a request under way,
// which it does not end.
const idleTimeout = 2 * time.Minute

// shutdownGrace is how long the calls under way when serving ends (SIGTERM,
// Ctrl-C) are given to finish and be answered before they are cancelled.
const shutdownGrace = 5 * time.Second

// relistRetryAfter is how long a capability whose tools could not be
// listed again after they changed is left before they are listed again,
// when a client asks for none of them.
const relistRetryAfter = 10 * time.Second

// errShuttingDown is why a call under way is cancelled once the grace has
// passed.
var errShuttingDown = errors.New("the server is shutting down")

// errSessionEnded is why a call under way is cancelled when its client
// ends the session.
var errSessionEnded = errors.New("the client ended the session")

// cancelledByClient says why the call of ctx was cancelled when its
// client cancelled it: by notifications/cancelled, on which the SDK
// cancels the call's context without a cause, or by ending its session
// (errSessionEnded). A call the server cancels (errShuttingDown), or
// whose connection broke, was not.
func cancelledByClient(ctx context.Context) (string, bool) {
	if ctx.Err() == nil {
		return "", false
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errSessionEnded):
		return "cancelled: " + cause.Error(), true
	case cause == context.Canceled:
		return "cancelled by the client", true
	}
	return "", false
}

// inflightCall is a tools/call under way, and how to cancel it.
type inflightCall struct {
	ss     *sdk.ServerSession
	cancel context.CancelCauseFunc
}

// source is a capability whose tools are served, and its share of them.
type source struct {
	c    capabilities.Capability // for one started in the background, the started one
	name string                  // how messages name it ("MCP everything"); "" when nothing does
	// watch is how c says its tools changed (nil: it is asked when a
	// client lists them).
	watch capabilities.ToolsWatcher
	// refreshing is held while its tools are listed again (refresh), and
	// guards version: c's ToolsVersion when they were last listed.
	refreshing sync.Mutex
	version    uint64
	// failed is set while its last listing failed: it is asked again
	// (see follow and refreshAll).
	failed atomic.Bool
	// failure is what the server's log was told of that listing, so that
	// asking again does not repeat it (under refreshing).
	failure string

	// Under the server's mu:
	names    []string                     // every tool it holds, withheld ones included, in its order
	tools    map[string]capabilities.Tool // those served
	defs     map[string]*sdk.Tool         // how clients are given them
	withheld []string                     // by ReadOnly
}

// label is how messages name src.
func (src *source) label() string {
	if src.name == "" {
		return "a capability"
	}
	return src.name
}

// newSource is c's source, before its tools are listed.
func newSource(c capabilities.Capability, name string) *source {
	src := &source{c: c, name: name}
	if name == "" {
		if id, ok := capabilities.As[interface{ ID() string }](c); ok {
			src.name = id.ID()
		}
	}
	// Read before the tools are listed, so that a change while they are
	// is not missed.
	if ch, ok := capabilities.As[capabilities.ToolsChanger](c); ok {
		src.version = ch.ToolsVersion()
	}
	src.watch, _ = capabilities.As[capabilities.ToolsWatcher](c)
	return src
}

// lateStart is a capability started in the background (StartingLater)
// whose tools have not all joined yet.
type lateStart struct {
	l    *later
	done chan struct{} // closed once its tools joined, or it failed
	err  error         // why its tools did not join; set before done closes
}

// emptyParameters is what a tool without parameters declares, as in a run.
var emptyParameters = map[string]any{"type": "object", "properties": map[string]any{}}

// New serves the tools of caps, which the server then owns: Close closes
// them. On error they are closed too.
//
// A capability built by a StartingLater registry whose server is still
// starting offers its tools when it is up: they are added then, and clients
// are told with notifications/tools/list_changed. A call meanwhile to a tool
// not offered yet waits for the servers still starting, with a progress
// notification saying so when the client asked for progress; when the tool's
// server failed to start, the call's result is an error naming it.
//
// The tools of a capability that changes them (capabilities.ToolsChanger)
// are served as they change (see update): a call of one it withdrew gets
// an error result saying so.
func New(ctx context.Context, caps []capabilities.Capability, opts Options) (_ *Server, err error) {
	s := &Server{caps: caps, listener: opts.Listener, readOnly: opts.ReadOnly, notice: opts.Notice,
		session: opts.Session, sessions: map[*sdk.ServerSession]*sessionCaps{},
		owner: map[string]*source{}, withdrawn: map[string]string{}, settled: make(chan struct{}),
		grace: shutdownGrace, idle: idleTimeout, inflight: map[*inflightCall]struct{}{},
		answers: map[httpCall]*answerStream{}}
	s.relistRetry.Store(int64(relistRetryAfter))
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	name, version := opts.Name, opts.Version
	if name == "" {
		name = "agentspec"
	}
	if version == "" {
		version = "devel"
	}
	changing := false // whether the list may change
	for _, c := range caps {
		if l, ok := c.(*later); ok {
			s.late = append(s.late, &lateStart{l: l, done: make(chan struct{})})
		}
		_, changes := capabilities.As[capabilities.ToolsChanger](c)
		changing = changing || changes
	}
	s.roots = servedRoots(caps)
	s.srv = sdk.NewServer(&sdk.Implementation{Name: name, Version: version}, &sdk.ServerOptions{
		// Tools only: no logging capability, no prompts, no resources. The
		// list changes when tools join late, or a capability changes its
		// own.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: changing || len(s.late) > 0}},
	})
	var watch []*source
	for _, c := range caps {
		if _, ok := c.(*later); ok {
			continue
		}
		src := newSource(c, "")
		tools, err := c.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		if _, err := s.add(src, tools); err != nil {
			return nil, err
		}
		if src.watch != nil {
			watch = append(watch, src)
		}
	}
	s.srv.AddReceivingMiddleware(s.awaitTool)
	var waitCtx context.Context
	waitCtx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	for _, ls := range s.late {
		s.wg.Add(1)
		go s.join(waitCtx, ls)
	}
	for _, src := range watch {
		s.wg.Add(1)
		go s.follow(waitCtx, src)
	}
	s.srv.AddReceivingMiddleware(s.track)
	// Added last, so outermost: see preencode.
	s.srv.AddReceivingMiddleware(preencode)
	return s, nil
}

// add offers the tools of src, all or none: a name already taken is an
// error. It returns the names withheld by ReadOnly.
func (s *Server) add(src *source, tools []capabilities.Tool) (withheld []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]bool{}
	defs := make([]*sdk.Tool, len(tools))
	for i, t := range tools {
		if s.owner[t.Name()] != nil || names[t.Name()] {
			return nil, fmt.Errorf("two capabilities provide a tool named %q; a client could not tell them apart", t.Name())
		}
		names[t.Name()] = true
		hints := capabilities.HintsOf(t)
		if s.readOnly && !hints.ReadOnly {
			continue
		}
		if defs[i], err = definition(t, hints); err != nil {
			return nil, err
		}
	}
	s.sources = append(s.sources, src)
	s.serve(src, tools, defs)
	return slices.Clone(src.withheld), nil
}

// serve makes tools src's share, defs[i] being how clients are given
// tools[i] (nil: withheld by ReadOnly), and withdraws what src held before
// and holds no more; a tool whose definition changed is given anew. The
// SDK tells connected clients the list changed. s.mu is held.
func (s *Server) serve(src *source, tools []capabilities.Tool, defs []*sdk.Tool) (joined, withdrawn []string) {
	holds := map[string]bool{}
	for _, t := range tools {
		holds[t.Name()] = true
	}
	for _, name := range src.names {
		if holds[name] {
			continue
		}
		delete(s.owner, name)
		if src.defs[name] != nil {
			withdrawn = append(withdrawn, name)
			s.withdrawn[name] = src.label()
		}
	}
	if len(withdrawn) > 0 {
		s.srv.RemoveTools(withdrawn...)
	}
	before := src.defs
	src.names, src.withheld = nil, nil
	src.tools, src.defs = map[string]capabilities.Tool{}, map[string]*sdk.Tool{}
	for i, t := range tools {
		name := t.Name()
		src.names = append(src.names, name)
		s.owner[name] = src
		if defs[i] == nil {
			src.withheld = append(src.withheld, name)
			if before[name] != nil {
				s.srv.RemoveTools(name)
				withdrawn = append(withdrawn, name)
			}
			continue
		}
		delete(s.withdrawn, name)
		src.tools[name], src.defs[name] = t, defs[i]
		if prev := before[name]; prev == nil {
			joined = append(joined, name)
		} else if sameDefinition(prev, defs[i]) {
			continue
		}
		s.srv.AddTool(defs[i], s.handler(src, name))
	}
	return joined, withdrawn
}

// sameDefinition reports whether a and b tell a client the same.
func sameDefinition(a, b *sdk.Tool) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// update serves the tools src offers now, once it changed them. They are
// checked as New checks them, but a tool that fails the checks (a name
// another capability's tool has, parameters MCP cannot take) is left out
// rather than failing the others, which are served already; the notes say
// why, and what changed.
func (s *Server) update(src *source, tools []capabilities.Tool) (notes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	names := map[string]bool{}
	var (
		kept []capabilities.Tool
		defs []*sdk.Tool
	)
	for _, t := range tools {
		name := t.Name()
		if o := s.owner[name]; o != nil && o != src || names[name] {
			notes = append(notes, fmt.Sprintf("tool %s of %s is not served: another capability provides a tool of that name", name, src.label()))
			continue
		}
		hints := capabilities.HintsOf(t)
		var def *sdk.Tool
		if !s.readOnly || hints.ReadOnly {
			var err error
			if def, err = definition(t, hints); err != nil {
				notes = append(notes, fmt.Sprintf("%s: %v; it is not served", src.label(), err))
				continue
			}
		}
		names[name] = true
		kept, defs = append(kept, t), append(defs, def)
	}
	withheldBefore := src.withheld
	joined, withdrawn := s.serve(src, kept, defs)
	var changes []string
	if len(joined) > 0 {
		changes = append(changes, strings.Join(joined, ", ")+plural(len(joined), " joins", " join"))
	}
	if len(withdrawn) > 0 {
		changes = append(changes, strings.Join(withdrawn, ", ")+plural(len(withdrawn), " is withdrawn", " are withdrawn"))
	}
	var newlyWithheld []string
	for _, name := range src.withheld {
		if !slices.Contains(withheldBefore, name) {
			newlyWithheld = append(newlyWithheld, name)
		}
	}
	if len(newlyWithheld) > 0 {
		changes = append(changes, "withheld by --read-only: "+strings.Join(newlyWithheld, ", "))
	}
	if len(changes) > 0 {
		notes = append(notes, fmt.Sprintf("%s's tools changed: %s", src.label(), strings.Join(changes, "; ")))
	}
	return notes
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// follow serves the tools of src, a ToolsWatcher, as they change, until
// ctx ends; a listing that failed is tried again after relistRetry.
func (s *Server) follow(ctx context.Context, src *source) {
	defer s.wg.Done()
	for {
		changed := src.watch.ToolsChanged()
		s.refresh(ctx, src)
		select {
		case <-changed:
		case <-s.retryAfterFailure(src):
		case <-ctx.Done():
			return
		}
	}
}

// retryAfterFailure is a channel that receives once the tools of src are
// to be listed again after a listing that failed; nil (never) when it did
// not fail. A time.Timer's channel, left unstopped, is collected.
func (s *Server) retryAfterFailure(src *source) <-chan time.Time {
	if !src.failed.Load() {
		return nil
	}
	return time.After(time.Duration(s.relistRetry.Load()))
}

// refreshAll refreshes every capability's tools, or with watched false
// those of the capabilities no follow goroutine refreshes: a client that
// lists the tools is not kept waiting while one is listing a server's.
func (s *Server) refreshAll(ctx context.Context, watched bool) {
	s.mu.Lock()
	sources := slices.Clone(s.sources)
	s.mu.Unlock()
	for _, src := range sources {
		if watched || src.watch == nil {
			s.refresh(ctx, src)
		}
	}
}

// refresh lists the tools of src again when its ToolsVersion moved since
// they were listed, and serves those it offers now (update). A capability
// that cannot list them keeps those served, and the server's log says why;
// they are listed again at the next refresh.
func (s *Server) refresh(ctx context.Context, src *source) {
	ch, ok := capabilities.As[capabilities.ToolsChanger](src.c)
	if !ok {
		return
	}
	src.refreshing.Lock()
	defer src.refreshing.Unlock()
	version := ch.ToolsVersion()
	if version == src.version {
		return
	}
	tools, err := src.c.Tools(ctx)
	if err != nil && ctx.Err() != nil {
		return // left for the next one to ask
	}
	var notes []string
	if err != nil {
		// Not taken for listed: asked again at the next refresh (follow's
		// retry, a call of a tool not offered), as a run asks again.
		src.failed.Store(true)
		if msg := fmt.Sprintf("%s: %v; the tools it offered are served as they were", src.label(), err); msg != src.failure {
			src.failure, notes = msg, []string{msg}
		}
	} else {
		src.version, src.failure = version, ""
		src.failed.Store(false)
		notes = s.update(src, tools)
	}
	if s.notice != nil {
		for _, n := range notes {
			s.notice(n)
		}
	}
}

// withdrawnResult answers a call of a tool that by withdrew.
func withdrawnResult(name, by string) *sdk.CallToolResult {
	msg := fmt.Sprintf("tool %s is no longer offered: %s withdrew it", name, by)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}

// join waits for a capability started in the background and offers its
// tools; the SDK tells connected clients the list changed.
func (s *Server) join(ctx context.Context, ls *lateStart) {
	defer s.wg.Done()
	var (
		tools    []capabilities.Tool
		withheld []string
	)
	c, err := ls.l.started(ctx)
	var src *source
	if err == nil {
		src = newSource(c, ls.l.name)
		if tools, err = c.Tools(ctx); err != nil {
			err = fmt.Errorf("listing tools: %w", err)
		}
	}
	if err == nil {
		withheld, err = s.add(src, tools)
	}
	if err == nil && src.watch != nil && ctx.Err() == nil {
		// Added while join is counted, so before Close's Wait returns.
		s.wg.Add(1)
		go s.follow(ctx, src)
	}
	stopped := errors.Is(err, errClosedEarly) || errors.Is(err, errClosedOnceUp) || errors.Is(err, errStoppedStarting)
	if err != nil && ctx.Err() == nil && !stopped {
		// A factory's error may not say which capability it is.
		err = fmt.Errorf("%s: %w", ls.l.name, err)
	}
	s.mu.Lock()
	ls.err = err
	close(ls.done)
	close(s.settled)
	s.settled = make(chan struct{})
	s.mu.Unlock()
	if s.notice == nil || ctx.Err() != nil || stopped {
		return
	}
	if err != nil {
		s.notice(err.Error())
		return
	}
	msg := ls.l.name + " is up: no tools join"
	if names := offeredNames(tools, withheld); len(names) > 0 {
		msg = fmt.Sprintf("%s is up: %d tools join (%s)", ls.l.name, len(names), strings.Join(names, ", "))
	}
	if len(withheld) > 0 {
		msg += fmt.Sprintf("; withheld by --read-only: %s", strings.Join(withheld, ", "))
	}
	s.notice(msg)
}

func offeredNames(tools []capabilities.Tool, withheld []string) []string {
	var names []string
	for _, t := range tools {
		if !slices.Contains(withheld, t.Name()) {
			names = append(names, t.Name())
		}
	}
	return names
}

// Starting returns how messages name the capabilities still starting in
// the background.
func (s *Server) Starting() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, ls := range s.late {
		select {
		case <-ls.done:
		default:
			names = append(names, ls.l.name)
		}
	}
	return names
}

// awaitTool holds a call to a tool not offered yet until the capabilities
// starting in the background have settled, or one of them offers it, and
// answers a call of a tool withdrawn with an error result saying so. The
// tools of capabilities that changed them are listed again before the
// client's tools/list, and before a call of a tool not offered.
func (s *Server) awaitTool(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "tools/list" {
			s.refreshAll(ctx, false)
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*sdk.CallToolParamsRaw)
		if !ok {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		known := s.owner[p.Name] != nil
		s.mu.Unlock()
		if !known {
			// It may have just joined: a call waits for a listing under
			// way.
			s.refreshAll(ctx, true)
		}
		told := false
		for {
			s.mu.Lock()
			// A name held but not offered was withheld: no capability
			// starting can offer it, since two cannot share a name.
			known, settled := s.owner[p.Name] != nil, s.settled
			by, withdrawn := s.withdrawn[p.Name]
			var waiting []*lateStart
			var failed []string
			stopped := false
			for _, ls := range s.late {
				select {
				case <-ls.done:
					if errors.Is(ls.err, errShuttingDown) {
						stopped = true
					} else if ls.err != nil {
						failed = append(failed, ls.err.Error())
					}
				default:
					waiting = append(waiting, ls)
				}
			}
			s.mu.Unlock()
			switch {
			case known:
				return next(ctx, method, req)
			case len(waiting) == 0 && stopped:
				// The server that may have offered it was stopped as
				// serving ends: the call is, as track cancels one.
				return nil, fatal(fmt.Errorf("the call was cancelled: %w", errShuttingDown))
			case len(waiting) == 0 && withdrawn:
				return withdrawnResult(p.Name, by), nil
			case len(waiting) == 0 && len(failed) > 0:
				msg := fmt.Sprintf("tool %s is not offered: %s", p.Name, strings.Join(failed, "; "))
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}, nil
			case len(waiting) == 0:
				return next(ctx, method, req)
			}
			if !told {
				told = true
				names := make([]string, len(waiting))
				for i, ls := range waiting {
					names[i] = ls.l.name
				}
				s.progress(ctx, req, p, fmt.Sprintf("tool %s is not offered yet: waiting for %s to start", p.Name, strings.Join(names, ", ")))
			}
			select {
			case <-settled:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// track keeps every tools/call under way, so that a session's end can
// cancel it (cancelCalls). A call so cancelled is a JSON-RPC error saying
// why.
func (s *Server) track(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*sdk.ServerSession)
		ctx, cancel := context.WithCancelCause(ctx)
		c := &inflightCall{ss: ss, cancel: cancel}
		s.cmu.Lock()
		s.inflight[c] = struct{}{}
		s.cmu.Unlock()
		defer func() {
			s.cmu.Lock()
			delete(s.inflight, c)
			s.cmu.Unlock()
			cancel(nil)
		}()
		res, err := next(ctx, method, req)
		if cause := context.Cause(ctx); err != nil && errors.Is(cause, errShuttingDown) {
			return nil, fatal(fmt.Errorf("the call was cancelled: %w", cause))
		}
		return res, err
	}
}

// cancelCalls cancels, for cause, the calls under way of the sessions
// which says to.
func (s *Server) cancelCalls(which func(*sdk.ServerSession) bool, cause error) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	for c := range s.inflight {
		if c.ss != nil && which(c.ss) {
			c.cancel(cause)
		}
	}
}

// progress sends msg as a progress notification, when the client asked
// for them.
func (s *Server) progress(ctx context.Context, req sdk.Request, p *sdk.CallToolParamsRaw, msg string) {
	token := p.GetProgressToken()
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if token == nil || !ok {
		return
	}
	// A client that cannot take the notification still gets its result.
	_ = ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Message: msg})
}

// Open builds the capabilities of a spec, relative paths resolving against
// workspace (empty: the working directory), and serves their tools.
func Open(ctx context.Context, sp *spec.Spec, workspace string, opts Options) (*Server, error) {
	caps, err := spec.Instantiate(ctx, sp, opts.Registry, capabilities.Setup{Dir: workspace, Transport: opts.Transport})
	if err != nil {
		return nil, err
	}
	return New(ctx, caps, opts)
}

// definition is the tool as a client lists it: a run's name, description
// and parameters, and its hints as the MCP tool annotations.
func definition(t capabilities.Tool, hints capabilities.Hints) (*sdk.Tool, error) {
	params := t.Parameters()
	if params == nil {
		params = emptyParameters
	}
	if params["type"] != "object" {
		return nil, fmt.Errorf("tool %s: MCP needs an object schema for the arguments, and its parameters have type %v", t.Name(), params["type"])
	}
	def := &sdk.Tool{Name: t.Name(), Description: t.Description(), InputSchema: params,
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:   hints.ReadOnly,
			IdempotentHint: hints.Idempotent,
			OpenWorldHint:  &hints.OpenWorld,
		}}
	if !hints.ReadOnly {
		// MCP: destructiveHint is meaningful only when readOnlyHint is false.
		def.Annotations.DestructiveHint = &hints.Destructive
	}
	return def, nil
}

// Tools returns the tools offered now, in order.
func (s *Server) Tools() []capabilities.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tools []capabilities.Tool
	for _, src := range s.sources {
		for _, name := range src.names {
			if t := src.tools[name]; t != nil {
				tools = append(tools, t)
			}
		}
	}
	return tools
}

// Withheld returns the names of the tools ReadOnly leaves out now.
func (s *Server) Withheld() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, src := range s.sources {
		names = append(names, src.withheld...)
	}
	return names
}

// MCP returns the SDK server, to connect it to a transport of one's own
// (sdk.NewInMemoryTransports in tests, for instance). A receiving
// middleware added to it sees a tools/call result wrapped, so that its
// text is encoded once: an sdk.Result, but not a *sdk.CallToolResult.
// What the middleware changes through sdk.Result's methods is sent.
func (s *Server) MCP() *sdk.Server { return s.srv }

// Close closes the capabilities. The server must not be serving any more.
func (s *Server) Close() error {
	if s.stop != nil {
		s.stop()
	}
	var errs []error
	for _, c := range s.caps {
		if cl, ok := capabilities.As[io.Closer](c); ok {
			if err := cl.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.caps = nil
	s.mu.Lock()
	s.closed = true
	sessions := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for _, sc := range sessions {
		<-sc.ready
		errs = append(errs, capabilities.CloseAll(sc.caps))
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// sessionCaps are the capabilities of one client session (Options.Session).
type sessionCaps struct {
	ready chan struct{} // closed once built
	caps  []capabilities.Capability
	tools map[string]capabilities.Tool
	// roots are the paths caps reach, the server's own among them: a
	// fatal error of the session's calls may name them (callFailed).
	roots []string
	err   error
}

// sessionCapsOf returns the capabilities of the call's session, building
// them at its first call with buildCtx (the call's context without the
// call, whose values the capabilities may keep and whose events are the
// session's).
func (s *Server) sessionCapsOf(ctx, buildCtx context.Context, ss *sdk.ServerSession) (*sessionCaps, error) {
	if ss == nil {
		return nil, errors.New("a call without a session")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("the server is closing")
	}
	sc := s.sessions[ss]
	if sc == nil {
		sc = &sessionCaps{ready: make(chan struct{})}
		s.sessions[ss] = sc
		s.mu.Unlock()
		sc.build(context.WithoutCancel(buildCtx), s.session, s.roots)
		go func() {
			ss.Wait()
			s.mu.Lock()
			own := s.sessions[ss] == sc
			if own {
				delete(s.sessions, ss)
			}
			s.mu.Unlock()
			if own {
				capabilities.CloseAll(sc.caps)
			}
		}()
	} else {
		s.mu.Unlock()
		select {
		case <-sc.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if sc.err != nil {
		return nil, sc.err
	}
	return sc, nil
}

// build builds the session's capabilities; served are the roots of the
// server's own.
func (sc *sessionCaps) build(ctx context.Context, newCaps func(context.Context) ([]capabilities.Capability, error), served []string) {
	defer close(sc.ready)
	caps, err := newCaps(ctx)
	if err != nil {
		sc.err = fmt.Errorf("building the session's capabilities: %w", err)
		return
	}
	roots := append(servedRoots(caps), served...)
	slices.Sort(roots)
	sc.roots = slices.Compact(roots)
	sc.caps, sc.tools = caps, map[string]capabilities.Tool{}
	for _, c := range caps {
		tools, err := c.Tools(ctx)
		if err != nil {
			sc.err = fmt.Errorf("listing the session's tools: %w", err)
			return
		}
		for _, t := range tools {
			sc.tools[t.Name()] = t
		}
	}
}

// handler calls the tool name of src, the one it offers now.
func (s *Server) handler(src *source, name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.mu.Lock()
		t := src.tools[name]
		s.mu.Unlock()
		if t == nil {
			// Withdrawn as the call came in.
			return withdrawnResult(name, src.label()), nil
		}
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		id := "mcp-" + strconv.FormatInt(s.calls.Add(1), 10)
		if req.Session != nil && req.Session.ID() != "" {
			// Over HTTP: which client's call it is (stdio has one).
			ctx = runtime.WithSessionID(ctx, req.Session.ID())
		}
		if s.listener != nil {
			ctx = capabilities.WithListener(ctx, s.listener)
		}
		// What the session's capabilities emit while the call builds them
		// is the session's, not the call's.
		sessionCtx := ctx
		ctx = capabilities.WithCall(ctx, capabilities.CallInfo{ID: id, Tool: name})
		roots := s.roots // what the call's client may see
		if err := s.emit(ctx, runtime.ToolCall{ID: id, Name: name, Args: args}); err != nil {
			return nil, s.callFailed(id, name, err, roots)
		}
		start := time.Now()
		var (
			out    string
			err    error
			status = runtime.ToolOK
			tool   = t
		)
		if s.session != nil {
			if sc, serr := s.sessionCapsOf(ctx, sessionCtx, req.Session); serr != nil {
				err = serr
			} else {
				roots = sc.roots
				if own, ok := sc.tools[name]; ok {
					tool = own
				}
			}
		}
		switch {
		case err != nil:
		case !isObject(args):
			err = capabilities.Retry("the arguments of %s are not a JSON object", name)
		default:
			out, err = tool.Call(ctx, args)
		}
		msg, retry := capabilities.AsRetry(err)
		why, cancelled := cancelledByClient(ctx)
		shutdown := err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), errShuttingDown)
		switch {
		case err == nil:
		case cancelled:
			// Whatever the tool made of its context's end: the client
			// gave up on the call, and the server did not fail.
			status, msg, out, retry = runtime.ToolCancelled, why, "", false
		case shutdown:
			// Its grace passed as serving ended: the client is told so
			// (see the middleware), and so is the server's own log.
			status, msg, out, retry = runtime.ToolCancelled, "cancelled: "+errShuttingDown.Error(), "", false
			if s.notice != nil {
				s.notice(name + " (call " + id + ") " + msg)
			}
		case retry:
			status, out = runtime.ToolRetry, msg
		default:
			status, msg = runtime.ToolFatal, err.Error()
		}
		if s.listener != nil {
			text, truncated := runtime.EventText(out)
			if lerr := s.emit(ctx, runtime.ToolResult{
				ID: id, Name: name, Status: status, Duration: time.Since(start),
				Chars: utf8.RuneCountInString(out), Message: msg, Refusal: capabilities.RefusalOf(err),
				Text: text, Truncated: truncated,
			}); lerr != nil && err == nil {
				return nil, s.callFailed(id, name, lerr, roots)
			}
		}
		switch status {
		case runtime.ToolFatal:
			return nil, s.callFailed(id, name, err, roots)
		case runtime.ToolCancelled:
			// Not written: the client is not answered (see lineConn and
			// answerStream) or has gone; or, at shutdown, answered by the
			// middleware.
			return nil, fatal(errors.New(msg))
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}, IsError: retry}, nil
	}
}

func isObject(args json.RawMessage) bool {
	trimmed := bytes.TrimSpace(args)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}

func (s *Server) emit(ctx context.Context, ev capabilities.Event) error {
	if s.listener == nil {
		return nil
	}
	if err := s.listener(ctx, ev); err != nil {
		return fmt.Errorf("event listener (%s): %w", ev.Kind(), err)
	}
	return nil
}

// ServeStdio serves one client over r and w (newline-delimited JSON-RPC)
// until r ends or ctx is done, which both count as a clean end; the calls
// read before r ended are answered first. When ctx is done, r is read no
// further and the calls under way are given a few seconds (shutdownGrace)
// to finish and be answered, as at the end of r; those still under way
// are then cancelled, and answered with an error saying so. When r is a
// pipe or socket (*os.File), as stdin is under an MCP client, messages are
// read by the goroutine that asks for them (see lineTransport); any other
// reader (a regular file, a terminal, an io.Reader) is copied through a
// pipe by a goroutine of its own, so that ctx can end a read that would
// block.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	in, closeIn := r, (func() error)(nil)
	if f, ok := r.(*os.File); ok {
		in, closeIn = pollable(f)
	}
	if closeIn == nil {
		pr, pw := io.Pipe()
		go func() {
			_, err := io.Copy(pw, r)
			pw.CloseWithError(err)
		}()
		in, closeIn = pr, pr.Close
	}
	// Closed here when ctx is done, and by the connection when it ends.
	closeIn = sync.OnceValue(closeIn)
	hand := &handOff{}
	// The session outlives ctx by the grace: its input is closed when ctx
	// is done, and the calls read are then answered as at its end.
	sctx := context.WithValue(context.WithoutCancel(ctx), handOffKey{}, hand)
	ss, err := s.srv.Connect(sctx, &lineTransport{in: in, out: w, closeIn: closeIn, hand: hand}, nil)
	if err != nil {
		closeIn()
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
		closeIn()
		t := time.AfterFunc(s.grace, func() {
			s.cancelCalls(func(c *sdk.ServerSession) bool { return c == ss }, errShuttingDown)
		})
		<-ended
		t.Stop()
		return nil
	}
	// EPIPE: the client closed its end of w, and is gone.
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// Handler serves streamable HTTP (every path). A request with an Origin
// header that is not the server's own (see sameOrigin) is refused with 403
// before anything else is looked at: it comes from a web page, which a
// browser let reach this address, the way DNS rebinding does (the MCP
// transport's rule). With a token, a request without
// `Authorization: Bearer TOKEN` is refused with 401. The SDK's protection
// against DNS rebinding (a loopback listener refuses a foreign Host header)
// stays on. A session its client ends (DELETE) has its calls under way
// cancelled. A call its client cancels (notifications/cancelled) is not
// answered: its POST's stream ends without the answer. What a session's
// GET stream is sent before its client opens it is given to it then
// (see eventStore).
func (s *Server) Handler(token string) http.Handler {
	return s.httpHandler(token, nil, newEventStore())
}

// httpHandler is Handler's, whose GET streams end when stopping does, and
// which keeps the sessions' events in events.
func (s *Server) httpHandler(token string, stopping context.Context, events *eventStore) http.Handler {
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, &sdk.StreamableHTTPOptions{
		// A client that went away without a DELETE does not hold its
		// session forever.
		SessionTimeout: 30 * time.Minute,
		// What a session's GET stream carries before its client opens it
		// is given to it then (see eventStore).
		EventStore: events,
	})
	h = s.endingCalls(h)
	h = s.withoutCancelledAnswers(h, events)
	if token != "" {
		h = requireToken(h, token)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origins := r.Header.Values("Origin"); len(origins) > 0 && (len(origins) > 1 || !sameOrigin(r, origins[0])) {
			http.Error(w, "a request from another origin is refused", http.StatusForbidden)
			return
		}
		if stopping != nil && r.Method == http.MethodGet {
			// A client's standing stream, for notifications, ends with
			// serving; answers go on the streams of their POSTs.
			ctx, cancel := context.WithCancel(r.Context())
			defer context.AfterFunc(stopping, cancel)()
			defer cancel()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// endingCalls cancels the calls under way of a session its client ends
// (DELETE): no one is left to answer, and the SDK would not end the
// session, nor answer the DELETE, before they returned.
func (s *Server) endingCalls(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
			s.cancelCalls(func(ss *sdk.ServerSession) bool { return ss.ID() == id }, errSessionEnded)
		}
		h.ServeHTTP(w, r)
	})
}

// requireToken refuses, with 401, a request without the bearer token. The
// scheme's name is matched without regard to case, as HTTP's
// authentication schemes are (RFC 9110, 11.1): "bearer TOKEN" is the token.
func requireToken(h http.Handler, token string) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentspec"`)
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin, the Origin header of r, is the
// server's own: scheme http, the port r reached, and as host the address r
// reached or a name of loopback (localhost, 127.0.0.1, [::1]). Nothing else,
// "null" included, is.
func sameOrigin(r *http.Request, origin string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	host, port, err := net.SplitHostPort(local.String())
	if err != nil {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return false
	}
	p := u.Port()
	if p == "" {
		p = "80"
	}
	if p != port {
		return false
	}
	name := u.Hostname()
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip, own := net.ParseIP(name), net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.Equal(own))
}

// Listen opens the listener for Serve. An address without a host
// (":8080", "8080") listens on loopback only; any other host is refused
// unless a token is set, so that no one else on the network reaches the
// tools without one. An address refused so, or not an address at all, is
// an ErrAddress; any other error is a failure to listen on a good one (in
// use, or not this machine's), which names the address.
func Listen(addr, token string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if _, perr := strconv.Atoi(addr); perr != nil {
			return nil, fmt.Errorf("%w %q: expected HOST:PORT, :PORT or PORT", ErrAddress, addr)
		}
		host, port = "", addr
	}
	if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
		return nil, fmt.Errorf("%w %q: port %s is not from 0 to 65535", ErrAddress, addr, port)
	} else if err != nil {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return nil, fmt.Errorf("%w %q: port %q is neither a number nor a service's name", ErrAddress, addr, port)
		}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if !isLoopback(host) && token == "" {
		return nil, fmt.Errorf("%w %s is reachable beyond this machine; set a bearer token so clients must present it", ErrAddress, addr)
	}
	hostPort := net.JoinHostPort(host, port)
	ln, err := net.Listen("tcp", hostPort)
	if err != nil {
		// net's text ("listen tcp 127.0.0.1:8080: bind: address already
		// in use") is said as what could not be done, and why.
		cause := err
		var (
			se *os.SyscallError
			oe *net.OpError
		)
		switch {
		case errors.As(err, &se):
			cause = se.Err
		case errors.As(err, &oe):
			cause = oe.Err
		}
		return nil, &listenError{addr: hostPort, cause: cause, err: err}
	}
	return ln, nil
}

// ErrAddress is what Listen's error wraps when the address is refused
// before anything is listened on: not HOST:PORT, a port out of range, or a
// host beyond loopback without a token. Such an address is the caller's
// mistake, which trying again will not mend.
var ErrAddress = errors.New("address")

// listenError is a failure to listen on an address that is good.
type listenError struct {
	addr  string
	cause error // what went wrong, without net's "listen tcp ADDR: bind: "
	err   error // net's error, which Unwrap gives
}

func (e *listenError) Error() string { return "cannot listen on " + e.addr + ": " + e.cause.Error() }
func (e *listenError) Unwrap() error { return e.err }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves streamable HTTP on ln until ctx is done, then shuts down:
// no request is taken any more, the calls under way are given a few
// seconds (shutdownGrace) to finish and be answered, those still under way
// are then cancelled and answered with an error saying so, and Serve
// returns once they have returned, every HTTP session of the server
// closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener, token string) error {
	stopping, stop := context.WithCancel(context.Background())
	defer stop()
	hs := &http.Server{Handler: s.httpHandler(token, stopping, newEventStore()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: s.idle}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stop()
	overHTTP := func(ss *sdk.ServerSession) bool { return ss.ID() != "" }
	late := time.AfterFunc(s.grace, func() { s.cancelCalls(overHTTP, errShuttingDown) })
	defer late.Stop()
	// The calls cancelled at the grace still answer, on their POSTs.
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace+2*time.Second)
	defer cancel()
	err := hs.Shutdown(shutdown)
	<-done
	if errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
		err = nil
	}
	// A call whose client went away is still under way until the grace
	// has cancelled it; Close waits for it.
	for ss := range s.srv.Sessions() {
		if overHTTP(ss) {
			ss.Close()
		}
	}
	return err
}

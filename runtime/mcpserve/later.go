package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
)

// StartingLater returns a registry with reg's types in which a capability
// whose tools live behind the network (capabilities.Remote: an MCP server
// started with command, or reached by url) is started in the background
// rather than while the spec is built. Such a server may take half a minute
// to come up (an npx package fetched on first use), and an MCP client gives
// up on a server that does not answer initialize in time; New serves the
// other capabilities' tools at once and adds these when their server is up.
//
// Every capability is first built with Setup.CheckOnly, so that its options
// are checked, and a remote one's errors about them are the spec's, as in a
// run. The registry builds nothing else differently: nested capabilities
// (PrefixTools's) are built by reg.
//
// With names (a spec's capability types, say), the registry holds only
// those of reg's types, since each type a registry is given compiles its
// schema; without, it holds them all.
func StartingLater(reg *capabilities.Registry, names ...string) (*capabilities.Registry, error) {
	return remoteApart(reg, names, func(ctx context.Context, name string, probe capabilities.Capability,
		build func(context.Context) (capabilities.Capability, error)) capabilities.Capability {
		return startLater(ctx, name, probe, build)
	})
}

// ForSessions returns a registry with reg's types (only those named, when
// names are given) that builds a spec's capabilities for one client session
// (Options.Session): as reg builds them, except that one whose tools live
// behind the network (capabilities.Remote) offers no tools, since the
// capabilities shared by all sessions serve them, and starts nothing. Its
// options are checked as StartingLater checks them.
func ForSessions(reg *capabilities.Registry, names ...string) (*capabilities.Registry, error) {
	return remoteApart(reg, names, func(_ context.Context, _ string, probe capabilities.Capability,
		_ func(context.Context) (capabilities.Capability, error)) capabilities.Capability {
		closeCapability(probe)
		return noTools{}
	})
}

// noTools is a capability without tools.
type noTools struct{}

func (noTools) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }

// remoteApart returns a registry with reg's types (those named, or all) in
// which a remote capability, told by a build with Setup.CheckOnly, is what
// remote makes of that checked build and of how to build it in full.
func remoteApart(reg *capabilities.Registry, names []string, remote func(ctx context.Context, name string,
	probe capabilities.Capability, build func(context.Context) (capabilities.Capability, error)) capabilities.Capability) (*capabilities.Registry, error) {
	if reg == nil {
		reg = capabilities.Default()
	}
	if len(names) == 0 {
		names = reg.Names()
	}
	out := capabilities.NewRegistry()
	for _, name := range names {
		t, ok := reg.Lookup(name)
		if !ok {
			continue // unknown: the loader refused the spec already
		}
		if _, dup := out.Lookup(name); dup {
			continue
		}
		build := t.New
		t.New = func(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
			args.Registry = reg
			if t.Pure || t.SetsWorkspace {
				return build(ctx, args) // neither starts nor reaches anything
			}
			checkArgs := args
			checkArgs.CheckOnly = true
			probe, err := build(ctx, checkArgs)
			if err != nil {
				return nil, err
			}
			if r, ok := capabilities.As[capabilities.Remote](probe); !ok || !r.Remote() {
				closeCapability(probe)
				return build(ctx, args)
			}
			return remote(ctx, name, probe, func(ctx context.Context) (capabilities.Capability, error) { return build(ctx, args) }), nil
		}
		if err := out.Register(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// later is a capability being started in the background: until it is up it
// offers no tools, and what it reaches and its warnings are those of its
// options (the checked build, which Unwrap returns).
type later struct {
	name  string                  // how messages name it: "MCP slow"
	probe capabilities.Capability // built with CheckOnly
	done  chan struct{}           // closed once started, or failed to
	stop  context.CancelFunc

	mu     sync.Mutex
	c      capabilities.Capability // set when started
	err    error                   // why it did not start
	peers  []capabilities.Capability
	closed bool
}

var _ capabilities.Wrapper = (*later)(nil)

func startLater(ctx context.Context, typeName string, probe capabilities.Capability, build func(context.Context) (capabilities.Capability, error)) *later {
	l := &later{name: typeName, probe: probe, done: make(chan struct{})}
	if id, ok := capabilities.As[interface{ ID() string }](probe); ok && id.ID() != "" {
		l.name += " " + id.ID()
	}
	ctx, l.stop = context.WithCancel(ctx)
	go func() {
		defer close(l.done)
		c, err := build(ctx)
		if err != nil {
			c = nil // a factory that failed left nothing to close; c may be a typed nil
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if err == nil && l.peers != nil {
			err = l.handPeers(c)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			// Stopped, by the end of serving or by Close: no failure
			// of its own.
			closeCapability(c)
			l.err = errStoppedStarting
		case err != nil:
			closeCapability(c)
			l.err = err
		case l.closed:
			closeCapability(c)
			l.err = errClosedEarly
		default:
			l.c = c
		}
	}()
	return l
}

var errClosedEarly = errors.New("closed before it started")

// errClosedOnceUp is why a capability that started is not there: it was
// closed since (Close).
var errClosedOnceUp = errors.New("closed")

// errStoppedStarting is why a capability did not start when serving ended
// (the context its start was given, or Close) while it was starting.
var errStoppedStarting = fmt.Errorf("stopped while it was starting: %w", errShuttingDown)

// Tools returns the tools of the started capability, or none yet.
func (l *later) Tools(ctx context.Context) ([]capabilities.Tool, error) {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c == nil {
		return nil, nil
	}
	return c.Tools(ctx)
}

// started waits for the capability to start and returns it, or why it did
// not.
func (l *later) started(ctx context.Context) (capabilities.Capability, error) {
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c, l.err
}

// Peers is handed on to the capability once it has started, or now if it
// has.
func (l *later) Peers(all []capabilities.Capability) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.peers = all
	if l.c != nil {
		return l.handPeers(l.c)
	}
	return nil
}

// handPeers hands the peers to c, which takes l's place among them. l.mu
// is held.
func (l *later) handPeers(c capabilities.Capability) error {
	p, ok := capabilities.As[capabilities.Peered](c)
	if !ok {
		return nil
	}
	all := make([]capabilities.Capability, len(l.peers))
	for i, o := range l.peers {
		if o == capabilities.Capability(l) {
			o = c
		}
		all[i] = o
	}
	return p.Peers(all)
}

// Unwrap returns the capability built to be checked, for what it reaches.
func (l *later) Unwrap() capabilities.Capability { return l.probe }

// Remote reports that the tools live behind the network.
func (l *later) Remote() bool { return true }

// Close stops a start under way and closes what was started.
func (l *later) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.stop()
	<-l.done
	closeCapability(l.probe)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return nil
	}
	// A join still to ask for it finds it closed, not started without
	// an error.
	c := l.c
	l.c, l.err = nil, errClosedOnceUp
	if cl, ok := capabilities.As[io.Closer](c); ok {
		return cl.Close()
	}
	return nil
}

func closeCapability(c capabilities.Capability) {
	if c == nil {
		return
	}
	if cl, ok := capabilities.As[io.Closer](c); ok {
		cl.Close()
	}
}

package confine

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// restrictLandlock puts the calling thread (only it: the init forks the
// shell from it) in a Landlock domain, best effort up to the kernel's ABI:
// read and execute everywhere, write (with REFER, so links and renames
// stay inside) below W and T, write to the harmless devices; without
// Network, TCP bind and connect (and UDP from ABI 10) denied, connect to
// pathname Unix sockets made outside denied (ABI 9), abstract Unix sockets
// scoped (ABI 6); signals scoped always (ABI 6). The thread must have
// no_new_privs set.
func restrictLandlock(p Policy) error {
	cfg := landlock.V11
	root := landlock.RODirs("/")
	if p.Network {
		cfg.HandledAccessNet = 0
		cfg.Scoped = landlock.ScopedSet(ll.ScopeSignal)
		root = root.WithResolveUnix()
	}
	cfg = cfg.BestEffort()
	fd, flags, err := cfg.NewRulesetFD(
		root,
		landlock.RWDirs(p.Root, p.Temp).WithRefer(),
		landlock.RWFiles(writableDevs...).IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil // this kernel has no Landlock: Available said so
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("entering the Landlock domain: %w", err)
	}
	return nil
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

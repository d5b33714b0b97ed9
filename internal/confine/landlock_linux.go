package confine

import (
	"errors"
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// restrictLandlock puts the calling thread (only it: the init forks the
// shell from it) in the Landlock domain of ABI abi, the kernel's
// (landlockRules). A domain that cannot be entered whole fails the
// command: it never runs with less. The thread must have no_new_privs set.
func restrictLandlock(p Policy, abi int) error {
	cfg, rules, err := landlockRules(p, abi)
	if err != nil {
		return err
	}
	fd, flags, err := landlockRuleset(cfg, rules)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("entering the Landlock domain: %w", err)
	}
	return nil
}

// landlockConfigs are go-landlock's configurations of ABI 1, 2, ...: each
// handles every right its ABI knows.
var landlockConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// landlockRules is the ruleset for a kernel of Landlock ABI abi (a newer
// one than go-landlock knows gets its newest): read and execute
// everywhere, write below W and T, write to the harmless devices; without
// Network, TCP bind and connect (ABI 4, and UDP from ABI 10) denied,
// connect to pathname Unix sockets made outside denied (ABI 9), abstract
// Unix sockets scoped (ABI 6); signals scoped always (ABI 6). REFER, which
// lets links and renames cross directories inside W and T, is granted from
// ABI 2; ABI 1 has no such right and its kernel refuses every such rename
// or link (EXDEV).
//
// The configuration is the ABI's own, not go-landlock's best effort: that
// gives up the whole ruleset when a rule asks for more than the kernel
// has, and a kernel of a lower ABI than abi fails the ruleset instead.
func landlockRules(p Policy, abi int) (landlock.Config, []landlock.Rule, error) {
	if abi < 1 {
		return landlock.Config{}, nil, errors.New("confining the command: this kernel has no Landlock")
	}
	cfg := landlockConfigs[min(abi, len(landlockConfigs))-1]
	root := landlock.RODirs("/")
	if p.Network {
		cfg.HandledAccessNet = 0
		cfg.Scoped &= landlock.ScopedSet(ll.ScopeSignal)
		// A right the ABI does not handle is left out of the rule.
		root = root.WithResolveUnix()
	}
	work := landlock.RWDirs(p.Root, p.Temp)
	if cfg.HandledAccessFS&ll.AccessFSRefer != 0 {
		work = work.WithRefer()
	}
	return cfg, []landlock.Rule{root, work, landlock.RWFiles(writableDevs...).IgnoreIfMissing()}, nil
}

// landlockRuleset creates the ruleset of cfg and rules. go-landlock
// answers fd -1 and no error when it creates none (nothing to restrict):
// that is an error here, as the command would run unconfined.
func landlockRuleset(cfg landlock.Config, rules []landlock.Rule) (fd int, flags uint32, err error) {
	fd, flags, err = cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, 0, fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return -1, 0, fmt.Errorf("building the Landlock ruleset: none was created for %v", cfg)
	}
	return fd, flags, nil
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

package confine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The rules ask for no right the kernel's ABI lacks: go-landlock gives up
// a whole ruleset that asks for REFER below ABI 2 (Linux 5.13 to 5.18),
// and the command then ran unconfined.
func TestLandlockRulesFitTheABI(t *testing.T) {
	t.Parallel()
	for abi := 1; abi <= 12; abi++ {
		for _, network := range []bool{false, true} {
			t.Run(fmt.Sprintf("abi %d network %v", abi, network), func(t *testing.T) {
				t.Parallel()
				cfg, rules, err := landlockRules(Policy{Root: "/w", Temp: "/t", Network: network}, abi)
				require.NoError(t, err)
				assert.NotZero(t, cfg.HandledAccessFS, "file access is restricted")
				assert.Equal(t, abi >= 2, cfg.HandledAccessFS&ll.AccessFSRefer != 0, "REFER handled")
				asked := false
				for _, r := range rules {
					asked = asked || strings.Contains(fmt.Sprint(r), "refer")
				}
				assert.Equal(t, abi >= 2, asked, "REFER granted below W and T: %v", rules)
				switch {
				case network:
					assert.Zero(t, cfg.HandledAccessNet, "the network is the command's")
				case abi >= 4:
					assert.NotZero(t, cfg.HandledAccessNet, "TCP is restricted")
				}
			})
		}
	}
}

func TestLandlockRulesRefuseAKernelWithoutLandlock(t *testing.T) {
	t.Parallel()
	_, _, err := landlockRules(Policy{Root: "/w", Temp: "/t"}, 0)
	assert.ErrorContains(t, err, "Landlock")
}

// go-landlock creates no ruleset, and says so with fd -1 and no error,
// when there is nothing to restrict; a command never runs unconfined for
// that.
func TestARulesetNotCreatedIsAnError(t *testing.T) {
	t.Parallel()
	fd, _, err := landlockRuleset(landlock.Config{}, nil)
	assert.ErrorContains(t, err, "Landlock")
	assert.Equal(t, -1, fd)
}

// The ruleset of every ABI up to this kernel's is created here, ABI 1's
// too.
func TestLandlockRulesetsAreCreated(t *testing.T) {
	t.Parallel()
	kernel := landlockABI()
	if kernel < 1 {
		t.Skip("this kernel has no Landlock")
	}
	dir := t.TempDir()
	for abi := 1; abi <= kernel; abi++ {
		cfg, rules, err := landlockRules(Policy{Root: dir, Temp: dir}, abi)
		require.NoError(t, err)
		fd, _, err := landlockRuleset(cfg, rules)
		require.NoError(t, err, "ABI %d", abi)
		assert.GreaterOrEqual(t, fd, 0, "ABI %d", abi)
		unix.Close(fd)
	}
}

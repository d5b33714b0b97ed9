package confine_test

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/agentspec/agentspec/internal/confine"
)

// dialVar makes the test binary a network client (for the escape tests,
// which run it as a command): "network address token" dials and sends
// the token.
const dialVar = "CONFINE_TEST_DIAL"

func TestMain(m *testing.M) {
	confine.Main()
	if spec := os.Getenv(dialVar); spec != "" {
		os.Exit(dial(spec))
	}
	os.Exit(m.Run())
}

func dial(spec string) int {
	var network, address, token string
	if _, err := fmt.Sscan(spec, &network, &address, &token); err != nil {
		fmt.Println("bad", dialVar, err)
		return 2
	}
	conn, err := net.Dial(network, address)
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(token)); err != nil {
		fmt.Println("write:", err)
		return 1
	}
	fmt.Println("sent")
	return 0
}

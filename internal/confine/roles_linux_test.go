package confine_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/agentspec/agentspec/internal/confine"
)

// The test binary also plays the command's side of some tests, chosen by
// an environment variable the test gives the command.

// dialVar makes the test binary a network client (for the escape tests,
// which run it as a command): "network address token" dials and sends
// the token.
const dialVar = "CONFINE_TEST_DIAL"

// parentVar makes the test binary a parent that starts a command and
// then waits to be killed: "sandbox root temp script" (sandbox is 0 or
// 1; the fields must not hold spaces, but script, the rest, may).
const parentVar = "CONFINE_TEST_PARENT"

// role plays the part the environment names, if any.
func role() (int, bool) {
	if spec := os.Getenv(dialVar); spec != "" {
		return dial(spec), true
	}
	if spec := os.Getenv(parentVar); spec != "" {
		return parent(spec), true
	}
	if spec := os.Getenv(keyVar); spec != "" {
		return keyClient(spec), true
	}
	if spec := os.Getenv(landlockVar); spec != "" {
		return landlocked(spec), true
	}
	return 0, false
}

func dial(spec string) int {
	if spec == "io_uring" {
		return ioURing()
	}
	if spec == "vsock" {
		return vsock()
	}
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

func parent(spec string) int {
	f := strings.SplitN(spec, " ", 4)
	if len(f) != 4 {
		fmt.Println("bad", parentVar)
		return 2
	}
	_, err := confine.Start(context.Background(), confine.Command{
		Script: f[3], Dir: f[1], Env: []string{"PATH=" + os.Getenv("PATH")}, Sandbox: f[0] == "1",
		Policy: confine.Policy{Root: f[1], Temp: f[2]},
	})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	fmt.Println("started")
	select {} // until killed
}

//go:build !unix

package shell

// captureFlags: elsewhere than Unix no command runs (confine.Start
// refuses), so no capture is ever read.
const captureFlags = 0

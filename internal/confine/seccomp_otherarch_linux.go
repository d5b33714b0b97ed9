//go:build linux && !amd64 && !arm64

package confine

// nativeArch 0: no filter is built for this architecture, and Available
// says so.
const nativeArch = 0

const foreignNrBase = 0x40000000

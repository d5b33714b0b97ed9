//go:build !linux

package main

import "os"

// maxRSS is not measured here: the units of getrusage's maxrss differ by
// system, and the figures this benchmark reports are taken on Linux.
func maxRSS(*os.ProcessState) int64 { return 0 }

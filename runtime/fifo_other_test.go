//go:build !unix

package runtime

import "errors"

func mkfifo(string) error { return errors.New("no named pipes here") }

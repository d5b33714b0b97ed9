//go:build !unix

package cache

import "path/filepath"

// writeEntry puts data in the file name of dir through writeAtomic, without
// syncing (see Cache.write).
func writeEntry(dir, name string, data []byte) error {
	return writeAtomic(filepath.Join(dir, name), data, false)
}

//go:build !unix

package cli

import "os"

// dirIdentity is what tells the directory dir apart from every other: its
// real absolute path, where a stat carries no inode to tell it by.
func dirIdentity(dir string, _ os.FileInfo) any { return realPath(dir) }

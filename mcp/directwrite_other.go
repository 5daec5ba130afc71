//go:build !unix

package mcp

import "os"

// nonBlockingWrite is not offered here: every frame goes through the
// writer goroutine.
func nonBlockingWrite(*os.File) func(p []byte) (int, error) { return nil }

//go:build !unix

package mcp_test

import "time"

// processCPU is unknown here: benchmarks report zero.
func processCPU() time.Duration { return 0 }

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunInProcess drives run itself, as later commands' tests can: the
// same entry point as the binary, with buffers for the standard streams.
func TestRunInProcess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args       []string
		want       int
		wantStdout string
		wantStderr string
	}{
		{[]string{"help"}, exitOK, "Commands:", ""},
		{nil, exitUsage, "", "andon: missing command"},
		{[]string{"call", "-h"}, exitOK, "-stdio COMMAND", ""},
		{[]string{"call", "echo"}, exitUsage, "", "andon: call: one of --stdio or --url is required"},
		{[]string{"tools", "--stdio", `"unterminated`}, exitUsage, "", "andon: tools: --stdio: unterminated double quote"},
		{[]string{"call", "--stdio", server(""), "echo", `{"text":"in process"}`}, exitOK, "in process\n", ""},
		{[]string{"tools", "--stdio", server("")}, exitOK, "echo\tReturns its text.\n", ""},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		got := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
		if got != tt.want || !strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
			t.Errorf("run(%q) = %d, want %d\nstdout: %s\nstderr: %s", tt.args, got, tt.want, stdout.String(), stderr.String())
		}
	}
}

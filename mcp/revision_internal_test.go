package mcp

import (
	"slices"
	"testing"
)

// Negotiation takes the first row that fits as the newest: the table must
// be newest first, with LatestVersion on top and each revision once, or a
// new row put in the wrong place would be preferred (or passed over)
// silently.
func TestRevisionTableIsNewestFirst(t *testing.T) {
	names := SupportedVersions()
	if len(names) != len(revisions) || names[0] != LatestVersion {
		t.Fatalf("SupportedVersions() = %v, want every row, %s first", names, LatestVersion)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] <= names[i] {
			t.Errorf("revision %s is listed before %s: not newest first", names[i-1], names[i])
		}
	}
	for _, v := range []string{Version20241105, Version20250326, Version20250618, Version20251125, Version20260728} {
		if !slices.Contains(names, v) {
			t.Errorf("revision %s has no row", v)
		}
	}
	if r := newest(handshakeEra); r.name != Version20251125 {
		t.Errorf("newest handshake-era revision = %q, want %s", r.name, Version20251125)
	}
}

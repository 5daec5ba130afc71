package egress

import "net/netip"

// blockedRange is an address range that no request may reach unless an
// address-literal entry of Config.AllowedHosts covers it.
type blockedRange struct {
	prefix netip.Prefix
	name   string
}

var blockedRanges = func() []blockedRange {
	spec := []struct{ cidr, name string }{
		{"0.0.0.0/8", "unspecified (\"this network\")"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "carrier-grade NAT"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (cloud metadata)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved (and broadcast)"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::ffff:0:0/96", "IPv4-mapped"},
		{"::ffff:0:0:0/96", "IPv4-translated"}, // RFC 2765 (SIIT): reaches the IPv4 address it embeds
		{"::/96", "IPv4-compatible"},
		{"64:ff9b::/96", "NAT64"},
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"100::/64", "discard-only"},
		{"2001:db8::/32", "documentation"},
		{"2001:2::/48", "benchmarking"},
		{"2001:10::/28", "ORCHID"},
		{"2001:20::/28", "ORCHIDv2"},
		{"3fff::/20", "documentation"},
		{"5f00::/16", "segment routing"},
		{"fc00::/7", "unique local (includes fd00:ec2::254 metadata)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	}
	out := make([]blockedRange, len(spec))
	for i, s := range spec {
		out[i] = blockedRange{netip.MustParsePrefix(s.cidr), s.name}
	}
	return out
}()

var (
	teredo    = netip.MustParsePrefix("2001::/32")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// refusedRange returns the name of the refused range a falls in, or "" if a
// may be dialled. IPv4 addresses embedded in 6to4 and Teredo addresses are
// checked as well. An invalid Addr (a resolver's zero value) lies in no
// range, so it is refused by name: dialling it fails only after the secret
// was put on the request.
func refusedRange(a netip.Addr) string {
	if !a.IsValid() {
		return "not an IP address"
	}
	if a.Zone() != "" {
		return "scoped (zone)"
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(a) {
			return r.name
		}
	}
	b := a.As16()
	switch {
	case sixToFour.Contains(a):
		if name := refusedRange(netip.AddrFrom4([4]byte(b[2:6]))); name != "" {
			return "6to4 embedding " + name
		}
	case teredo.Contains(a):
		server := netip.AddrFrom4([4]byte(b[4:8]))
		client := netip.AddrFrom4([4]byte{b[12] ^ 0xff, b[13] ^ 0xff, b[14] ^ 0xff, b[15] ^ 0xff})
		if name := refusedRange(server); name != "" {
			return "Teredo server " + name
		}
		if name := refusedRange(client); name != "" {
			return "Teredo client " + name
		}
	}
	return ""
}

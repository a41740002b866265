package policy

import (
	"fmt"
	"net/netip"
)

// refusedRanges are the destinations the address guard refuses unless a
// policy's allow_private opens them: everything that is not the public
// internet. Names are for the 403 reason and the audit log.
var refusedRanges = []struct {
	prefix netip.Prefix
	name   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "cgnat"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "ipv4-compatible"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// AddrAllowed is the address guard: it reports whether the proxy may dial
// ip, and why not. Refused ranges are loopback, private, link-local
// (including 169.254.169.254, the cloud metadata service), CGNAT,
// unspecified, multicast and reserved space; IPv6 addresses that embed an
// IPv4 address (mapped, NAT64, 6to4) are judged by that address. A range
// listed in the policy's allow_private is let through.
func (p *Policy) AddrAllowed(ip netip.Addr) (bool, string) {
	ip = ip.Unmap().WithZone("")
	for _, pre := range p.AllowPrivate {
		if pre.Contains(ip) {
			return true, "allow_private " + pre.String()
		}
	}
	if ip.Is6() {
		if nat64Prefix.Contains(ip) || sixToFour.Contains(ip) {
			b := ip.As16()
			var v4 [4]byte
			if sixToFour.Contains(ip) {
				copy(v4[:], b[2:6])
			} else {
				copy(v4[:], b[12:16])
			}
			if ok, why := p.AddrAllowed(netip.AddrFrom4(v4)); !ok {
				return false, fmt.Sprintf("%s embeds %s", ip, why)
			}
		}
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(ip) {
			return false, fmt.Sprintf("%s is a %s address", ip, r.name)
		}
	}
	return true, ""
}

// Package egress is Hobbs's egress proxy: the only way out of the agent's
// container. It enforces an allowlist policy on both proxy paths — CONNECT
// tunnels and plain-HTTP forwarding — and denies everything else.
//
// The pieces:
//
//   - Policy (policy.go): the YAML format users already have — services (a
//     catalog of named bundles, services.go), domains (exact names, "*.x"
//     wildcards, optional ports), deny (wins over every allow) and
//     allow_private (CIDRs the address guard lets through). Files are parsed
//     strictly (unknown keys and bad patterns are errors with file:line) and
//     merged in order.
//   - NormalizeHost (host.go): one canonical form of a target host — lower
//     case, no trailing dot, IDNA to punycode, IP literals in every spelling
//     (127.1, 2130706433, 0x7f.0.0.1, [::ffff:127.0.0.1], zone ids) turned
//     into one address. The policy matches the canonical form only.
//   - The address guard (guard.go): loopback, private, link-local (cloud
//     metadata), CGNAT, unspecified, multicast and reserved addresses are
//     refused even for an allowed name, unless allow_private opens them.
//   - Server (server.go): the proxy, on net/http, with
//     github.com/elazarl/goproxy taking CONNECT requests (both of goproxy's
//     permissive defaults overridden: it never dials or forwards by
//     itself). The server resolves names itself, checks every resolved
//     address, and dials exactly the address it checked; the client never
//     chooses what is dialled after the check. Optional proxy
//     authentication (Basic, user "hobbs"), hot reload of the policy files
//     (fsnotify on their directories), idle and dial timeouts, and one
//     audit line per decision.
//   - Explain (explain.go): the one account of what happens to a
//     destination — allowed or denied and by which rule, and whether it is
//     an opaque tunnel, an intercepted one (for the secrets bound to it or
//     its request rules) or plain HTTP. The server asks it for every CONNECT
//     and every request it reads; `hobbs policy check` asks it too.
//   - Serving (server.go, tunnel.go, hosttap.go): every connection goes
//     to Go's HTTP server; an allowed opaque CONNECT is hijacked and
//     relayed with io.Copy (splice(2) on Linux), and the host tap checks
//     that a plain-HTTP request's Host header names its URL's host.
//   - The request pipeline (pipeline.go, inspect.go, mask.go): every
//     request the proxy reads — plain HTTP, and each request inside an
//     intercepted tunnel (intercept.go, ca.go) — goes through one function:
//     the policy's verdict, request rules, leak detection, substitution,
//     then one httputil.ReverseProxy that forwards it to the checked
//     addresses and masks the response.
//   - Secrets (secrets.go, placement.go, placeholder.go, mask.go,
//     sigv4.go): a session's vault values bound to hosts. The agent holds
//     a placeholder of the same structure; the proxy puts the value in its
//     place in requests to the bound hosts only, in the positions the
//     binding allows (headers unless it names others), and refuses (and
//     audits as a leak) a request that carries a placeholder anywhere
//     else, or a value to another host where the proxy reads plaintext.
//     Responses have every value masked in the forms hosts give it back
//     in. An AWS key pair is not substituted but signed (SigV4). HTTPS to
//     a bound host is intercepted with a certificate from the session CA;
//     every other host stays an opaque tunnel.
//   - Request rules (rules.go): allow or deny by method and path prefix
//     for a host, applied to every request the proxy reads (plain HTTP, and
//     HTTPS to a host with rules, which is intercepted for that).
//
// What it does not stop (see docs/egress.md): traffic inside an opaque
// tunnel is not inspected, so exfiltration to an allowed host and domain
// fronting through an allowed CDN remain possible; leak detection finds a
// placeholder or value only where it reads plaintext, as written or
// percent- or Basic-encoded, not otherwise transformed; masking cannot
// recognise a value a host hands back reversed, encrypted or otherwise
// transformed beyond the forms mask.go lists.
package egress

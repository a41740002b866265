// Package egress is Hobbs's egress proxy: the only way out of the agent's
// container. It enforces an allowlist policy on both proxy paths — CONNECT
// tunnels and plain-HTTP forwarding — and denies everything else.
//
// The policy it enforces — parsing, the host normaliser, matching,
// request rules, bindings, Explain, the session's secrets file — is
// package policy (src/policy); this package is the daemon.
//
// The pieces:
//
//   - The address guard (policy.Policy.AddrAllowed): loopback, private,
//     link-local (cloud metadata), CGNAT, unspecified, multicast and
//     reserved addresses are refused even for an allowed name, unless
//     allow_private opens them; the server checks every address it
//     resolves (dnscache.go caches lookups for seconds, never the check).
//   - Server (server.go): the proxy, on net/http, with
//     github.com/elazarl/goproxy taking CONNECT requests (both of goproxy's
//     permissive defaults overridden: it never dials or forwards by
//     itself). The server resolves names itself, checks every resolved
//     address, and dials exactly the address it checked; the client never
//     chooses what is dialled after the check. Optional proxy
//     authentication (Basic, user "hobbs"), hot reload of the policy files
//     (fsnotify on their directories), idle and dial timeouts, and one
//     audit line per decision.
//   - Every decision goes through policy.Policy.Explain: the server
//     asks it for every CONNECT and every request it reads.
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
//   - Secrets (secrets.go, mask.go, sigv4.go; the file and the forms a
//     value takes are policy's): a session's vault values bound to
//     hosts. The agent holds a placeholder of the same structure; the
//     proxy puts the value in its place in requests to the bound hosts
//     only, in the positions the binding allows (headers unless it names others), and refuses (and
//     audits as a leak) a request that carries a placeholder anywhere
//     else, or a value to another host where the proxy reads plaintext.
//     Responses have every value masked in the forms hosts give it back
//     in. An AWS key pair is not substituted but signed (SigV4). HTTPS to
//     a bound host is intercepted with a certificate from the session CA;
//     every other host stays an opaque tunnel.
//   - Request rules (policy.HostRules): applied to every request the
//     proxy reads (plain HTTP, and HTTPS to a host with rules, which is
//     intercepted for that).
//   - The audit log (auditlog.go): one policy.AuditLine per decision,
//     written from one goroutine in batches, kept and tried again while
//     the file cannot be written.
//
// What it does not stop (see docs/egress.md): traffic inside an opaque
// tunnel is not inspected, so exfiltration to an allowed host and domain
// fronting through an allowed CDN remain possible; leak detection finds a
// placeholder or value only where it reads plaintext, as written or
// percent- or Basic-encoded, not otherwise transformed; masking cannot
// recognise a value a host hands back reversed, encrypted or otherwise
// transformed beyond the forms policy's mask.go lists.
package egress

// Package policy is the egress policy model: what the proxy (src/egress)
// allows and how it treats each destination, apart from the daemon that
// carries it out, so the packages that read or edit a policy, plan a run
// or check a binding do not import the proxy.
//
// The pieces:
//
//   - Policy (policy.go): the YAML format — services (a catalog of named
//     bundles, services.go), domains (exact names, "*.x" wildcards,
//     optional ports), deny (wins over every allow), allow_private (CIDRs
//     the address guard lets through, guard.go), trusted, and request
//     rules (rules.go: allow or deny by method and path prefix). Files are
//     parsed strictly (unknown keys and bad patterns are errors with
//     file:line) and merged in order; Narrow cuts a policy down to a
//     headless run's hosts (narrow.go).
//   - NormalizeHost (host.go): one canonical form of a target host — lower
//     case, no trailing dot, IDNA to punycode, IP literals in every
//     spelling (127.1, 2130706433, 0x7f.0.0.1, [::ffff:127.0.0.1], zone
//     ids) turned into one address. The policy matches the canonical form
//     only.
//   - Explain (explain.go): the one account of what happens to a
//     destination — allowed or denied and by which rule, and whether it is
//     an opaque tunnel, an intercepted one (for the secrets bound to it or
//     its request rules) or plain HTTP. The proxy asks it for every
//     CONNECT and every request it reads; `hobbs policy check` asks it too
//     (Report, check.go).
//   - Binding (binding.go, placement.go): a secret bound to hosts, as
//     config.yaml's secrets: writes it, and where in their requests its
//     value may go. Check validates it; Compile gives the Matcher Explain
//     and the proxy use.
//   - A session's secrets (session.go, placeholder.go, mask.go): the file
//     the launcher hands the proxy (each Secret a Binding with its
//     placeholder and value, and the session CA), the placeholders of a
//     value's structure, and the forms a value is recognised and masked
//     in (NameMask for text that leaves a session).
//   - Editing (edit.go): policy.yaml's allow, deny, trust and remove,
//     under the policy lock, audited; LoadEffective reads the image's
//     default and the instance's file.
//   - The proxy's audit lines (auditline.go, denied.go, reads.go): their
//     shape, and what the launcher reads back from them (the hosts a run
//     was refused, the hosts a session read).
package policy

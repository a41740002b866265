// Package plan decides what one run of an agent may do. Everything is
// computed here, from config.yaml and a RunSpec, and nowhere else: package
// launcher carries a *Plan out with the secrets' values and decides
// nothing of its own. New is pure: it reads no clock, no engine and no
// file, and never sees a secret's value or the proxy's token (the launcher
// makes or decrypts those, and they reach the containers only in session
// files). The host's facts a plan needs come from Survey, which checks
// every bind source first.
//
//	RunSpec ──► Survey (Host) ──► New(config.yaml, spec) ──► Plan ──► launcher.Execute
//
// # What may this run do?
//
// Read its plan: `hobbs run --plan` and `hobbs playbook run --plan` print
// it (WriteSummary; --json the whole Plan). Golden tests pin the plans of
// representative runs in testdata/plans (TestGoldenPlans; `go test
// ./src/plan -run TestGoldenPlans -update` rewrites them after review), so
// a change that widens what an agent may do shows as a diff there;
// TestPlanInvariants checks what every plan keeps. Where each part is
// decided:
//
//   - Who starts it and for what: Kind and RunSpec (plan.go). A headless
//     run carries its playbook's approved allowance (playbook.Allowance:
//     the run: block's hosts, secrets, tools and limits, intersected with
//     the instance's policy, src/playbook/headless.go); a chat turn its
//     ChatSpec (chat.go); a triggered run its Trigger.
//   - Both containers: user, capabilities, no-new-privileges, init,
//     limits, network, labels (hardening, agent, proxy in plan.go;
//     Labels in labels.go), the seccomp profile that refuses setuid and
//     setgid bits (seccomp.go).
//   - Every mount: the workspace (its .git read-only), the instance's
//     shares (instance.AgentShares), the socket volume, Claude Code's
//     state (ClaudeState), the session files (sessionfiles.go: each file,
//     its container and what it holds). Every bind source is checked by
//     Survey (survey.go): reached without a link, a real directory or
//     file, owned by the user; the workspace neither holds the instance
//     nor is a system, home or hidden directory.
//   - Egress: the proxy's policy — the instance's, or a headless run's own
//     narrowed to its run: block (egress in plan.go) — the hosts whose
//     HTTPS it intercepts, and the agent's one way out, the relay to the
//     proxy's socket (no network of its own).
//   - Secrets, by name: env: variables the agent gets, secrets: bound to
//     hosts whose values only the proxy gets, a run: block's narrowing,
//     the names the launcher keeps for itself (secrets.go).
//   - Claude Code: its one command line for a session, a headless run, a
//     triggered run and a chat turn — permission mode, tools, turn and cost
//     limits, the prompt as data of the run's kind (claude.go).
//   - Time and disk: the time limit (Plan.Timeout) and the free disk kept
//     while the run is live (DiskWatch, diskwatch.go).
//   - Provenance: the run's origin (origin.go), from which src/provenance
//     decides whether what it changes waits for the owner's review.
//
// What the agent reaches at run time is then enforced elsewhere: the
// proxy (src/egress) allows only the plan's policy, and the launcher
// (src/launcher) creates exactly the containers of Plan.Create.
package plan

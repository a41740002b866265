// Package launcher runs sessions: the agent
// container behind the egress proxy sidecar. It drives the container engine
// only through its CLI (package engine), so docker and podman both work.
//
// What a run may do is decided by package plan, never here: PlanRun checks
// the instance's policy, surveys the host (plan.Survey) and makes the plan
// (plan.New); Execute carries a *plan.Plan out with the secrets' values it
// decrypts (execute.go), as a Session: Session.Run's steps are in
// session.go, what each does with the engine in create.go, events.go,
// proxy.go, agent.go and cleanup.go. Package runner starts runs for the
// commands and keeps what is kept of a headless run or a chat turn; this
// package never refers to it.
//
// # Session topology
//
// `hobbs run` creates, for a session named N:
//
//	volume    N-run-<random>  a 64k tmpfs holding one unix socket
//	container N-proxy   same image, `hobbs proxy`, on the egress network
//	                    only, listening on /run/hobbs/proxy.sock in N-run
//	                    (no TCP port); checks every request against the
//	                    merged policy and writes the audit log to the
//	                    instance's logs/
//	container N         the agent, with --network none (loopback only),
//	                    N-run mounted read-only: its entry point relays
//	                    127.0.0.1:3128 to the proxy's socket, its one way out
//	volume    hobbs-claude-<instance hash>  Claude Code state (~/.claude),
//	                    persistent across sessions; never removed by hobbs
//
// The egress network is config.yaml's egress_network: the engine's default
// network (nothing created), N-egress (created and removed with the
// session) or an existing network the user names.
//
// (A Docker --internal network would not do for the agent: a container on
// one reaches every service listening on the host through the network's
// gateway and the host's other addresses; tests/e2e TestEgress tries.)
//
// The agent runs as the invoking host user's uid:gid (so what it writes in the
// workspace and instance is owned by that user on the host; HOME is
// /home/dev whether or not the uid has a passwd entry), with every capability
// dropped, no-new-privileges, pids and memory limits from config, and an
// init process, and a seccomp profile that refuses setuid and setgid bits
// (package plan, seccomp.go). Mounts (package plan): the workspace at
// /home/dev/hobbs/workspace (rw; a repository's .git read-only), the
// instance's shares under /home/dev/.hobbs (instance.AgentShares: never
// the instance root), the Claude state volume at /home/dev/.claude. Every
// bind source is checked before anything is created: reached without a
// link, a real directory or file, owned by the user. The identity and
// framework skills are in the image, root-owned and read-only.
//
// Start-up order: a pipeline of engine CLI calls, each begun as soon as what
// it needs exists. The instance's policy is parsed on the host first (a
// policy the proxy would refuse ends the run before any object exists). Both
// containers are created at once — with Docker their mounts make the
// volumes, labels included — while leftovers of crashed sessions are
// removed and the image is checked (Session.Prepare); they are created from
// the image as it is (--pull never) and made again if the check builds or
// pulls it. Both start together. The agent's command does not wait for the
// proxy: its relay holds connections until the proxy answers. A proxy that
// fails to start or dies ends the session with its output. The engine's
// event stream reports the agent's death well before `docker start
// --attach` returns: the proxy's stop (SIGTERM) starts then; it is removed
// once the engine reports its death (with a session network, that goes
// then too), and the socket volume goes last. HOBBS_TRACE=1 prints every
// engine call with its timing (package engine).
//
// # Secrets
//
// Neither the proxy token nor vault-mapped variables ever appear in an argv
// (ours, docker's, or `docker inspect`'s) or in a container's configuration
// (Config.Env, which Docker also keeps on disk). The proxy token is fresh per
// session. The launcher writes the agent's variables (HTTP(S)_PROXY with the
// token, env: secrets, the placeholders of bound secrets) and the proxy's
// token to files in a private directory on a tmpfs and bind-mounts each
// read-only into its container (sessionfiles.go; the plan names them);
// the agent's entry point loads its variables with `hobbs session-env`,
// the proxy reads
// --auth-token-file. Secrets bound to hosts (config secrets:) go to the
// proxy only, with the session CA's key (--secrets-file); the agent gets
// the CA's certificate, which session-env adds to the CA bundle its tools
// read (package egress, "Secrets").
//
// # Labels, cleanup and ownership
//
// Every object a session creates carries labels: dev.hobbs.session=N,
// dev.hobbs.role (agent, proxy, network, claude-state, image),
// dev.hobbs.instance=<hash of the instance path> and dev.hobbs.owner=
// host/pid/start-time of the hobbs process that created it. On normal exit,
// Ctrl-C or SIGTERM the launcher removes the containers and networks it
// created — only those: a session name already taken by another container or
// network is refused and the existing object left alone. A launcher killed outright leaves labelled objects: the next
// `hobbs run` of the same instance removes those whose owner process is gone,
// and `hobbs stop --all` removes every session of the instance. The Claude
// state volume and images are kept. A stop of a session whose launcher
// runs leaves that launcher a mark (records.go) first: it then reports the
// session stopped (ExitStopped) rather than failed. Listing and removing
// an instance's sessions (hobbs ps, stop and logs, and a run's reaping of
// leftovers: ReapOrphans) is ps.go, which uses only the labels (labels.go)
// and the session notes (records.go), never the code that runs a session.
//
// Started on a terminal, `hobbs run` runs the launcher in the background
// with a ReadyFile and starts the agent itself, attached to the terminal:
// the launcher follows the agent by the engine's events, so the session
// outlives a detach (Ctrl-P Ctrl-Q); an agent not started within a minute
// of the ReadyFile ends the session.
//
// An engine the CLI cannot reach is an engine.UnreachableError (exit 3,
// with the fix): a session gives up at its first such answer, without
// retries.
//
// # Image
//
// The image a session runs is package image's: Session.Prepare makes sure
// of it (image.Ensure: used as it is, pulled or built) while the session's
// objects are created.
package launcher

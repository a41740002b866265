// Package memory keeps Hobbs's long-term memory: plain Markdown files that a
// person can read, edit and keep in git, handled through one set of tools so
// that they stay consistent, searchable and safe when many sub-agents write at
// once.
//
// # Format
//
// One memory per file, in memory/active/ (loaded into session context) or
// memory/archive/ (searchable, never loaded automatically). A file is YAML
// frontmatter between two "---" lines, then the Markdown body, which is the
// memory's text:
//
//	---
//	id: mem_20260122_001
//	tags: [preferences, editor]
//	created: 2026-01-22T09:30:00Z
//	last_accessed: 2026-01-22
//	reinforced: 0
//	source: conversation
//	supersedes: null
//	status: active
//	---
//
//	The user prefers Helix over Vim.
//
// The keys of the Hobbs seed keep their names and meaning: id (mem_YYYYMMDD_NNN
// for memories this package creates; any id without spaces or slashes is
// accepted from a hand-written file), tags, created, last_accessed,
// reinforced, source, supersedes and status (active, archived or superseded).
// This package adds updated, superseded_by, type and sources (every source that
// reinforced the memory). Dates may be written as 2026-01-22 or RFC 3339;
// values this package writes are RFC 3339 in UTC. Keys it does not know are
// kept, and so are YAML comments, when it rewrites a file: it edits the
// frontmatter's node tree and never touches the body. New files are named
// <id>.md; a hand-written file keeps its name, also when it moves between
// tiers.
//
// A file that cannot be parsed (no frontmatter, bad YAML, missing id, wrong
// value type, unknown status) or whose id another file already uses is a
// Problem with path, line and reason. Every operation reports the problems it
// meets, skips those files and carries on; no operation rewrites or moves them.
//
// Every change appends one JSON line to memory/history.jsonl (time, op, id,
// before and after summaries, source) and one event "memory.<op>" to the audit
// log. Archive, supersede and tidy move files between tiers; only Forget
// removes one, and with purge also takes its text out of the history and
// drops the search index (forget.go). Add, Supersede and Reinforce refuse
// text that audit.SecretKind recognises as a secret.
//
// # Locking
//
// Every change runs under the instance's "memory" lock (an flock on
// memory/.lock, which the agent's container shares): the change re-reads the
// files it needs after taking the lock, so concurrent writers serialise and
// none loses an update. Files are
// replaced atomically (safefile), so a reader without the lock sees either
// the old file or the new one. Fifty concurrent "add" of the same text leave
// one file whose reinforced count went up by 49: the first creates it
// (reinforced: 0), each later one reinforces it.
//
// # Similarity
//
// Text is normalised by lower-casing it and turning every run of characters
// that are not letters or digits into one space. Two memories whose normalised
// texts are equal are the same memory: add reinforces the existing one. Close
// matches are scored with the Jaccard index of their normalised word sets
// (|A∩B| / |A∪B|); Add reports active memories scoring at least
// CandidateThreshold as candidates, best first, so the agent can decide to
// reinforce or supersede one instead.
//
// # Scoring
//
// Active memories are ranked for context and tidy by
//
//	score = (1 + log2(1 + reinforced)) × 0.5^(idle / 90 days) + 0.5^(since_access / 30 days)
//
// where idle is the time since the memory was last created, updated or
// reinforced and since_access the time since last_accessed (a memory never
// accessed gets 0 for that term). Reinforcement and recent change dominate;
// recent use breaks ties. Equal scores order by id, newest first.
//
// Tidy archives an active memory when it has been neither changed, reinforced
// nor accessed for tidy_after_days × (1 + reinforced) days: each reinforcement
// buys another period.
//
// # Context
//
// BuildContext assembles what a session or sub-agent starts with: one line
// saying what the text is and where it comes from, foundation.md in full, then
// caller-supplied sections (claude.md for a session, an agent's operational.md
// for a sub-agent), then active memories filtered by tags, in score order, as
// many as fit the character budget. BuildHook wraps it for a Claude Code hook,
// keeping the additionalContext string within HookLimit; a foundation.md too
// long for that is named by path instead of included. FoundationFit measures
// foundation.md for warnings and hobbs doctor. Loading memories into context
// updates their last_accessed, batched: at most one rewrite per memory per
// day, all under one lock after the context is produced.
//
// # Recall
//
// Recall ranks memories for a question: BM25F over the stemmed words (Stem,
// the Snowball English stemmer; Snowball's English stop words left out) of
// their text and tags, scaled by the share of the question's words matched,
// raised by the best score of the memories created the same day, by stated
// times for a question about when and by a date the query names; then
// reinforcement and supersession (recall.go, docs/memory.md).
//
// # Index
//
// memory/.index holds derived data that makes listing, context, search and
// recall fast on large archives; deleting it is always safe. For each tier it
// keeps the parsed frontmatter of every file with the file's size, mtime,
// ctime and inode (<tier>.meta), a trigram index of the case-folded file
// contents (<tier>.tri) and, built with it from the same contents, the terms
// recall ranks by (<tier>.terms, terms.go). Only recall reads the terms file,
// and rebuilds the tier's index when it is missing or of another build. A search takes the trigrams of its literal (or of the longest
// literal a regular expression requires), intersects their posting lists, adds
// the files changed since the postings were built, and verifies every
// candidate against the real file, so a stale index can cost time but never
// invent a hit.
//
// The index files are read, never mapped (the agent can truncate them at
// any moment), and only in the parts an operation needs: header and flags at
// once, records all together, in order or one by one, and for a search
// the block of the key table and the posting list of each of its trigrams.
// Flags, the block index, each block, each record and each posting list
// carry a CRC-32C checksum. A file cut short or garbled costs a
// rebuild or a slower search, never a wrong answer or a crash.
//
// Freshness: the active tier is checked file by file (size, mtime, ctime,
// inode) on every use. The archive is large and cold, so its index is trusted
// as it is while the directory's own time stamps are unchanged. When they
// changed (a file was added, removed or renamed — every write of this package
// renames), every file is checked: a file replaced by rename can carry the
// inode number of the one it replaced, so a listing cannot tell which files
// changed. Every file is also checked when the last check is older than
// FullCheckEvery, so an archived file edited in place by another tool (the
// directory unchanged) is seen within that period (at once with a forced
// full check). Changed files are re-parsed incrementally and searched
// directly until enough have changed to rebuild the postings. Time stamps
// within RacyWindow of a check are never trusted (the "racily clean" rule of
// git), since a coarse clock can hide a change made in the same tick.
//
// # Untrusted files
//
// The agent's container writes memory/ too, so everything in it is
// untrusted input to the host: every file and directory is opened through
// the instance's safefile.Root (no link followed, no FIFO, socket or device
// opened, nothing blocking), memory files over MaxFileSize are not read, and
// a name read from the index must be a plain file name of its tier. What is
// refused is a Problem naming it; the operation skips it and carries on. A
// change does not start while memory/history.jsonl (or its lock) is a link
// or special file: nothing is changed that could not be logged.
package memory

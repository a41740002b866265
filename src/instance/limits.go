package instance

import (
	"fmt"
	"strconv"
)

// Size caps, one per kind of file. The host reads no file of the instance
// beyond the cap of its kind: safefile.Root.ReadFile refuses a larger one
// after one fstat, without reading it, with an error naming it
// (*safefile.TooLargeError), and never holds more than cap+1 bytes of it.
// The agent's container writes the shares, and a sparse file of any size
// costs it nothing: these caps keep a planted giant from exhausting the
// host's memory, whichever command reads it.
const (
	// MaxTaskFile: logs/tasks/*.md, a task record: frontmatter, a headless
	// run's output tail (256 KiB), the retrospective.
	MaxTaskFile = 1 << 20
	// MaxPlaybookFile: playbooks/*.md.
	MaxPlaybookFile = 1 << 20
	// MaxAgentFile: a sub-agent's definition (agents/custom/*.md) and its
	// operational learnings (agents/*/operational.md).
	MaxAgentFile = 1 << 20
	// MaxSkillFile: each file of a skill (skills/NAME/…) the host reads;
	// MaxSkillFiles: the files of one skill it reads at most.
	MaxSkillFile  = 1 << 20
	MaxSkillFiles = 256
	// MaxMemoryFile: a memory (memory/active, memory/archive).
	MaxMemoryFile = 4 << 20
	// MaxHistoryFile: memory/history.jsonl, an append-only log of every
	// memory change.
	MaxHistoryFile = 256 << 20
	// MaxTextFile: foundation.md, claude.md, config.yaml, policy.yaml (the
	// agent reads them; the user writes them).
	MaxTextFile = 1 << 20
	// MaxChannelFile: a messaging channel's host-only state (the paired
	// owners, pairing codes, pending buttons, the polling offset) and each
	// entry of its outbox and inbox.
	MaxChannelFile = 4 << 20
	// MaxGrantFile: grants/*.json, host-only, each holding an approved
	// playbook's text.
	MaxGrantFile = 4 << 20
	// MaxChatFile: chat/*.json, host-only, one conversation's last turns
	// (src/chat keeps each well below it).
	MaxChatFile = 1 << 20
	// MaxServeFile: hobbs serve's host-only state (serve/jobs/*.json,
	// each with its event: at most a 1 MiB webhook body, normalised;
	// serve/deliveries.json; an older hobbs's serve/queue.json and
	// serve/events/*.json).
	MaxServeFile = 16 << 20
)

// MaxSeq is the largest sequence number of a dated id (task_20261122_001,
// mem_20261122_001): a day holds at most this many of one kind. The agent
// names files in its shares, so a name carrying a larger number is not an
// id: it is refused and named, never parsed into a number that could wrap.
const MaxSeq = 999999

// ParseSeq reads the sequence number of a dated id: 1 to 6 digits, at
// most MaxSeq. Anything else (a sign, a space, more digits) is an error.
func ParseSeq(digits string) (int, error) {
	if len(digits) == 0 || len(digits) > len(strconv.Itoa(MaxSeq)) {
		return 0, fmt.Errorf("sequence number %q is not 1 to %d digits", digits, len(strconv.Itoa(MaxSeq)))
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("sequence number %q is not a number", digits)
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

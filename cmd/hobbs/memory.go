package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/memory"
	"github.com/hobbs-agent/hobbs/src/style"
)

func newMemoryCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Keep long-term memory: add, reinforce, supersede, search, recall, load into context",
		Long: `Memories are Markdown files with YAML frontmatter in the instance's
memory/active/ (loaded into every session) and memory/archive/ (searchable).
Every change is atomic, serialised on a lock, appended to memory/history.jsonl
and to the audit log. Memories are archived or superseded, not deleted; only
rm removes one. Text that looks like a secret is refused (keep secrets in
the vault). A file hobbs cannot parse is reported (path:line: reason) and
never rewritten. See docs/memory.md.`,
		Example: `  hobbs memory add "The user prefers short answers" --tag style
  hobbs memory search "short answers" --all
  hobbs memory context --format hook`,
	}
	cmd.AddCommand(memAddCmd(a), memReinforceCmd(a), memSupersedeCmd(a), memTierCmd(a, "archive"),
		memTierCmd(a, "promote"), memForgetCmd(a), memShowCmd(a), memListCmd(a), memSearchCmd(a), memRecallCmd(a), memContextCmd(a),
		memTidyCmd(a), memLintCmd(a), memStatsCmd(a))
	return cmd
}

// sayAdded says on stderr what add or supersede did (the id goes to stdout).
func (a *app) sayAdded(res *memory.AddResult) {
	switch res.Action {
	case "reinforced":
		a.status("reinforced %s (now %d): same text as an existing memory", res.ID, res.Reinforced)
	default:
		a.status("created %s", res.ID)
	}
	if res.Superseded != "" {
		a.status("superseded %s (moved to the archive)", res.Superseded)
	}
	for _, c := range res.Candidates {
		a.status("similar: %s (%.2f) %s", c.ID, c.Similarity, c.Summary)
	}
	if res.Hint != "" {
		a.hint("%s", res.Hint)
	}
}

func memAddCmd(a *app) *cobra.Command {
	var opt memory.AddOptions
	cmd := &cobra.Command{
		Use:   "add [TEXT|-]",
		Short: "Add a memory, or reinforce the existing one with the same text",
		Long: `add stores TEXT (or stdin with -) as a new active memory and prints its id.

If an active memory has the same text after normalisation (case, whitespace,
punctuation), that memory is reinforced instead (reinforced +1, updated,
source appended). Memories with a similar text (Jaccard similarity of their
words >= 0.5) are listed on stderr, and in the JSON as candidates, so that you
can reinforce or supersede one instead.`,
		Example: `  hobbs memory add "The user's timezone is Europe/Paris" --tag profile --source conversation
  echo "Deploys happen on Tuesdays" | hobbs memory add - --type fact
  hobbs memory add "Use pnpm, not npm" --supersedes mem_20260110_002 --json`,
		Args: usageArgs(cobra.ArbitraryArgs),
	}
	f := cmd.Flags()
	f.StringArrayVar(&opt.Tags, "tag", nil, "tag (repeatable)")
	f.StringVar(&opt.Type, "type", "", "kind of memory: fact, preference, decision…")
	f.StringVar(&opt.Source, "source", "", "where it comes from (a conversation, a file, a URL)")
	f.StringVar(&opt.Supersedes, "supersedes", "", "id of the memory this one replaces (its tags, type and source carry over unless given)")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		text, err := a.textArg(args, "memory text")
		if err != nil {
			return err
		}
		res, err := s.Add(text, opt)
		if err != nil {
			return err
		}
		res.Hint = adviceText(res.Advice)
		return out.printLine(res, res.ID, func() { a.sayAdded(res) })
	})
	return cmd
}

func memReinforceCmd(a *app) *cobra.Command {
	var source string
	cmd := &cobra.Command{
		Use:     "reinforce ID",
		Short:   "Count one more confirmation of a memory",
		Example: "  hobbs memory reinforce mem_20260122_001 --source conversation",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().StringVar(&source, "source", "", "where the confirmation comes from")
	out := a.jsonFlag(cmd, "print the memory as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		m, err := s.Reinforce(args[0], source)
		if err != nil {
			return err
		}
		return out.printLine(m, m.ID, func() { a.status("reinforced %s (now %d)", m.ID, m.Reinforced) })
	})
	return cmd
}

func memSupersedeCmd(a *app) *cobra.Command {
	var opt memory.AddOptions
	cmd := &cobra.Command{
		Use:   "supersede ID [TEXT|-]",
		Short: "Replace a memory with a new one (the old one is archived as superseded)",
		Long: `supersede adds TEXT as a new memory that replaces ID: the old memory gets
status superseded and superseded_by, moves to the archive, and the new one
records supersedes. The new memory keeps the old one's tags, type and source
unless --tag, --type or --source are given. Same as: hobbs memory add TEXT
--supersedes ID.`,
		Example: `  hobbs memory supersede mem_20260110_002 "The user now prefers pnpm"
  echo "Standup moved to 9:30" | hobbs memory supersede mem_20260110_004 -`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
	}
	f := cmd.Flags()
	f.StringArrayVar(&opt.Tags, "tag", nil, "tag of the new memory (repeatable; default: the old memory's tags)")
	f.StringVar(&opt.Type, "type", "", "kind of memory (default: the old memory's)")
	f.StringVar(&opt.Source, "source", "", "where the new text comes from (default: the old memory's source)")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		text, err := a.textArg(args[1:], "memory text")
		if err != nil {
			return err
		}
		res, err := s.Supersede(args[0], text, opt)
		if err != nil {
			return err
		}
		res.Hint = adviceText(res.Advice)
		return out.printLine(res, res.ID, func() { a.sayAdded(res) })
	})
	return cmd
}

func memTierCmd(a *app, verb string) *cobra.Command {
	short, example := "Move an active memory to the archive", "  hobbs memory archive mem_20260122_001"
	if verb == "promote" {
		short, example = "Move an archived memory back to the active tier", "  hobbs memory promote mem_20250901_003"
	}
	cmd := &cobra.Command{
		Use:     verb + " ID",
		Short:   short,
		Example: example,
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print the memory as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		move := s.Archive
		if verb == "promote" {
			move = s.Promote
		}
		m, changed, err := move(args[0])
		if err != nil {
			return err
		}
		return out.printLine(m, m.ID, func() {
			if changed {
				a.status("%s: %s, now in %s", m.ID, m.Status, m.Tier)
			} else {
				a.status("%s: already %s, nothing changed", m.ID, m.Status)
			}
		})
	})
	return cmd
}

func memForgetCmd(a *app) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"forget"},
		Short:   "Remove a memory for good (--purge: its text from the history and index too)",
		Long: `rm (or forget, its older name) removes the memory's file from the active tier or the archive. The
history (memory/history.jsonl) keeps its lines, with the first line of its
text, so it can still be read back there: use archive for a memory that
only no longer applies, rm for one that must not be kept.

--purge also rewrites the history without the memory's text (the lines stay,
marked purged) and drops the search index (memory/.index, rebuilt by the
next command). It also works for an id whose file is already gone.

The history line and the audit entry name the id, never the text.`,
		Example: `  hobbs memory rm mem_20260122_001
  hobbs memory rm mem_20260122_001 --purge --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "also take the memory's text out of memory/history.jsonl and drop the search index")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		res, err := s.Forget(args[0], purge)
		if err != nil {
			return err
		}
		return out.printLine(res, res.ID, func() {
			if res.Removed {
				a.status("forgot %s: removed %s", res.ID, res.Path)
			} else {
				a.status("%s: no file left to remove", res.ID)
			}
			if res.Purged {
				a.status("purged its text from %s, dropped %s naming it; search index dropped",
					style.N(res.HistoryLines, "history line", "history lines"), style.N(res.HistoryDropped, "unreadable line", "unreadable lines"))
			} else {
				a.status("memory/history.jsonl still holds its text: hobbs memory rm %s --purge takes it out", res.ID)
			}
		})
	})
	return cmd
}

func memShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show ID",
		Short:   "Print a memory file as it is (frontmatter and text)",
		Example: "  hobbs memory show mem_20260122_001\n  hobbs memory show mem_20260122_001 --json | jq .text",
		Args:    usageArgs(cobra.ExactArgs(1)),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		m, err := s.Show(args[0])
		if err != nil {
			return err
		}
		return out.print(m, func(w io.Writer) error {
			a.status("%s", m.Path)
			_, err := w.Write(m.Raw())
			return err
		})
	})
	return cmd
}

type scopeFlags struct{ archive, all bool }

func (f *scopeFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.archive, "archive", false, "the archive instead of the active memories")
	cmd.Flags().BoolVar(&f.all, "all", false, "active and archived memories")
	cmd.MarkFlagsMutuallyExclusive("archive", "all")
}

func (f *scopeFlags) scope() memory.Scope { return memory.ScopeOf(f.all, f.archive) }

func memListCmd(a *app) *cobra.Command {
	var sf scopeFlags
	var opt memory.ListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List memories (active by default), newest first",
		Example: `  hobbs memory list
  hobbs memory list --all --status superseded
  hobbs memory list --tag profile --json`,
		Args: usageArgs(cobra.NoArgs),
	}
	sf.add(cmd)
	cmd.Flags().StringArrayVar(&opt.Tags, "tag", nil, "only memories with this tag (repeatable: any of them)")
	cmd.Flags().StringVar(&opt.Status, "status", "", "only this status: active, archived or superseded")
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		opt.Scope = sf.scope()
		list, err := s.List(opt)
		if err != nil {
			return err
		}
		return out.print(list, func(w io.Writer) error {
			if len(list) == 0 {
				a.status("no memories")
				return nil
			}
			memory.WriteList(w, list)
			a.status("%s", style.N(len(list), "memory", "memories"))
			return nil
		})
	})
	return cmd
}

func memSearchCmd(a *app) *cobra.Command {
	var sf scopeFlags
	var opt memory.SearchOptions
	var files bool
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Find memories containing a text (case-insensitive) or matching a regex",
		Long: `search prints, for each matching line: id, path and the line. QUERY is a
case-insensitive literal; with --regex it is an RE2 expression as written
(add (?i) for case-insensitive). Searches the active memories by default.

An index in memory/.index keeps search fast on a large archive; it is
derived data, checked against the files and safe to delete.`,
		Example: `  hobbs memory search "timezone"
  hobbs memory search --all --regex 'pnpm|yarn' --limit 5
  hobbs memory search invoice --archive --tag finance --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	sf.add(cmd)
	f := cmd.Flags()
	f.BoolVar(&opt.Regex, "regex", false, "QUERY is an RE2 regular expression")
	f.StringArrayVar(&opt.Tags, "tag", nil, "only memories with this tag (repeatable: any of them)")
	f.IntVar(&opt.Limit, "limit", 0, "at most this many memories (0: all)")
	f.BoolVar(&opt.Full, "full", false, "check every file against the index first (after editing archived files in place)")
	f.BoolVarP(&files, "files-with-matches", "l", false, "print only id and path of each matching memory")
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		opt.Query, opt.Scope = args[0], sf.scope()
		if opt.Limit < 0 {
			return errs.Usagef("--limit must be >= 0")
		}
		hits, err := s.Search(opt)
		if err != nil {
			return err
		}
		return out.print(hits, func(w io.Writer) error {
			memory.WriteHits(w, s.In, hits, files)
			if len(hits) == 0 {
				a.status("no match")
			}
			return nil
		})
	})
	return cmd
}

func memRecallCmd(a *app) *cobra.Command {
	var sf scopeFlags
	opt := memory.RecallOptions{Limit: memory.DefaultRecallLimit}
	cmd := &cobra.Command{
		Use:   "recall QUERY",
		Short: "Find the memories most likely to answer a question, best first",
		Long: `recall ranks memories by the words of QUERY in any form (stop words left out)
in their text and tags; a question about when favours memories that say when.
Prints id, score, path, first line. For an exact name, use search. See docs/memory.md.`,
		Example: `  hobbs memory recall "what did I decide about the car insurance?"
  hobbs memory recall "when did we move to Lyon" --all --limit 5 --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	sf.add(cmd)
	cmd.Flags().StringArrayVar(&opt.Tags, "tag", nil, "only memories with this tag (repeatable: any of them)")
	cmd.Flags().IntVar(&opt.Limit, "limit", opt.Limit, "at most this many memories (0: all that match)")
	out := a.jsonFlag(cmd, "print as JSON (id, status, tier, path, score, text)")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		opt.Query, opt.Scope = args[0], sf.scope()
		list, err := s.Recall(opt)
		if err != nil {
			return err
		}
		return out.print(list, func(w io.Writer) error {
			if memory.WriteRecalled(w, s.In, list) == 0 {
				a.status("nothing recalled")
			}
			return nil
		})
	})
	return cmd
}

func memContextCmd(a *app) *cobra.Command {
	var agent, format string
	var tags []string
	var budget int
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Print what a session starts with: foundation, claude.md, ranked memories",
		Long: `context prints foundation.md in full, then claude.md, then the active
memories ranked by score (reinforcement, recency, access; see docs/memory.md),
filtered by --tag, cut to --budget characters (default: memory.context_budget
in config.yaml, which fits Claude Code's 10,000-character hook limit). With
--agent, that agent's operational.md replaces claude.md and comes after the
memories, as in hobbs agent context (which also applies the agent's tags).

--format hook prints the JSON a Claude Code SessionStart hook returns, its
additionalContext within the hook limit: a foundation.md too long for it is
named by path instead of included, with a warning. --format json prints what
was included. The memories loaded get last_accessed updated
(at most once a day each).`,
		Example: `  hobbs memory context
  hobbs memory context --format hook          # in a SessionStart hook
  hobbs memory context --agent researcher --tag research --budget 4000`,
		Args: usageArgs(cobra.NoArgs),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			return memory.CheckFormat(format)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "context for this sub-agent: its operational.md (after the memories) instead of claude.md")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "only memories with this tag (repeatable: any of them)")
	cmd.Flags().IntVar(&budget, "budget", 0, "characters at most (default: memory.context_budget)")
	cmd.Flags().StringVar(&format, "format", "text", "text, hook (SessionStart hook JSON) or json")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		limit, err := a.contextBudget(cmd, s, format, budget)
		if err != nil {
			return err
		}
		opt, err := s.SessionContext(agent, tags, limit)
		if err != nil {
			return err
		}
		return a.printContext(s, opt, format)
	})
	return cmd
}

func memTidyCmd(a *app) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "tidy",
		Short: "Archive active memories left idle too long (never deletes)",
		Long: `tidy moves to the archive every active memory that was neither changed,
reinforced nor loaded into context for memory.tidy_after_days × (1 +
reinforced) days. Nothing is deleted; hobbs memory promote brings one back.`,
		Example: "  hobbs memory tidy --dry-run\n  hobbs memory tidy",
		Args:    usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only list what would be archived")
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		c, err := a.config(s.In)
		if err != nil {
			return err
		}
		res, err := s.Tidy(c.Memory.TidyAfterDays, dryRun)
		if err != nil {
			return err
		}
		return out.print(res, func(w io.Writer) error {
			verb := "archived"
			if dryRun {
				verb = "would archive"
			}
			for _, r := range res {
				fmt.Fprintln(w, r)
			}
			a.status("%s %s", verb, style.N(len(res), "memory", "memories"))
			return nil
		})
	})
	return cmd
}

func memLintCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Check every memory file; report path:line: reason (exit 1 if any)",
		Example: `  hobbs memory lint
  hobbs memory lint --json`,
		Args: usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print the problems as JSON")
	// Not withMemory: the files the store cannot read are lint's result,
	// not warnings.
	cmd.RunE = a.withExistingInstance(func(cmd *cobra.Command, args []string, in instance.Instance) error {
		probs, n, err := memory.Open(in, a.audit(in)).Lint()
		if err != nil {
			return err
		}
		return a.printLint(out, probs, errs.Failf("%s in memory files", style.N(len(probs), "problem", "problems")).
			Advise(memory.FilesToFix), style.N(n, "memory", "memories")+", no problems")
	})
	return cmd
}

func memStatsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "stats",
		Short:   "Count memories per tier, status and tag",
		Example: "  hobbs memory stats\n  hobbs memory stats --json",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print as JSON")
	cmd.RunE = a.withMemory(func(cmd *cobra.Command, args []string, s *memory.Store) error {
		st, err := s.Stats()
		if err != nil {
			return err
		}
		return out.print(st, st.WriteSummary)
	})
	return cmd
}

// contextBudget returns --budget when given, else memory.context_budget of
// config.yaml, and warns when a hook's context will be cut.
func (a *app) contextBudget(cmd *cobra.Command, s *memory.Store, format string, budget int) (int, error) {
	if !cmd.Flags().Changed("budget") {
		c, err := a.config(s.In)
		if err != nil {
			return 0, err
		}
		budget = c.Memory.ContextBudget
	}
	warn, err := memory.CheckBudget(budget, format)
	if warn != "" {
		a.warn("%s", warn)
	}
	return budget, err
}

// printContext prints the context opt describes in format
// (memory.Store.WriteContext).
func (a *app) printContext(s *memory.Store, opt memory.ContextOptions, format string) error {
	return s.WriteContext(a.out, opt, format, a.reportProblems, a.warn)
}

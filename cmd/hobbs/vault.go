package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/style"
	"github.com/hobbs-agent/hobbs/src/vault"
)

func newVaultCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vault",
		Short: "Keep secrets encrypted with age; map them into sessions",
		Long: `The vault stores secrets (tokens, passwords) as age-encrypted files in
vault/data/NAME.age, readable with the identity in vault/keys/identity.txt.

vault/keys never enters the agent container: the agent can list entry names
but not decrypt them. A secret reaches a session only when config.yaml names
it: bound to hosts under secrets: (secrets: {GITHUB_TOKEN: {vault:
github-token, hosts: [api.github.com]}}: the agent holds a placeholder, the
egress proxy puts the value into requests to those hosts only), or as an
environment variable under env: (env: {GITHUB_TOKEN: vault:github-token}: the
agent holds the value). hobbs run decrypts it on the host in memory. Values
are never taken from the command line, and every access is recorded in the
audit log by name.

Entry names: ` + vault.NameRule + `.
A passphrase-protected identity asks on the terminal; scripts can set
` + vault.EnvPassphraseFile + ` to a file holding the passphrase.`,
		Example: `  hobbs vault init
  printf %s "$TOKEN" | hobbs vault set github-token
  hobbs vault get github-token | gh auth login --with-token
  hobbs vault list`,
	}
	cmd.AddCommand(newVaultInitCmd(a), newVaultSetCmd(a), newVaultGetCmd(a), newVaultListCmd(a),
		newVaultRmCmd(a), newVaultRenameCmd(a), newVaultRecipientsCmd(a), newVaultRotateCmd(a))
	return cmd
}

// entryNames wraps a positional-args validator: the arguments are also
// valid entry names, checked before the vault is opened.
func entryNames(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := usageArgs(v)(cmd, args); err != nil {
			return err
		}
		for _, n := range args {
			if err := vault.CheckName(n); err != nil {
				return err
			}
		}
		return nil
	}
}

func newVaultInitCmd(a *app) *cobra.Command {
	var opt vault.InitOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the vault's identity (an age X25519 key)",
		Long: `Create vault/keys/identity.txt (mode 0600, in the layout of age-keygen) and
vault/keys/recipients.txt, and print the public key on stdout.

With --passphrase the identity file is itself encrypted with a passphrase
(scrypt), asked twice on the terminal — never taken from the command line. Every
command that decrypts then asks for it (or reads the file named by
` + vault.EnvPassphraseFile + `).

init never replaces an existing identity: run again, it changes nothing.
Back up vault/keys/identity.txt: without it the entries cannot be read.`,
		Example: `  hobbs vault init
  hobbs vault init --passphrase`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&opt.Passphrase, "passphrase", false, "protect the identity with a passphrase (asked on the terminal)")
	cmd.Flags().BoolVar(&opt.Force, "force", false, "create an identity even though entries encrypted to a lost one exist")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
		res, err := v.Init(opt)
		if err != nil {
			return err
		}
		return out.print(res, func(w io.Writer) error {
			if res.Existing {
				a.status("vault already initialised: %s kept, nothing changed", v.In.Rel(v.In.VaultIdentity()))
			}
			for _, p := range res.Created {
				a.status("created  %s", p)
			}
			if res.Protected && !res.Existing {
				a.status("the identity is protected by your passphrase")
			}
			if !res.Existing {
				a.status("back up %s: without it your secrets cannot be read", v.In.VaultIdentity())
			}
			if res.PublicKey != "" {
				fmt.Fprintln(w, res.PublicKey)
			}
			return nil
		})
	})
	return cmd
}

func newVaultSetCmd(a *app) *cobra.Command {
	var fromFile string
	var raw bool
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Store a secret, read from stdin or a file (never from argv)",
		Long: `Encrypt a value and store it as vault/data/NAME.age, replacing any previous
value.

The value comes from stdin (hidden prompt on a terminal) or from --from-file.
It is never accepted on the command line: argv is visible to every process and
kept in shell history. One trailing newline (as added by echo or an editor) is
removed unless --raw is given. Values are at most 1 MiB.

NAME: ` + vault.NameRule + `.`,
		Example: `  hobbs vault set github-token                 # prompts, input hidden
  printf %s "$TOKEN" | hobbs vault set github-token
  hobbs vault set smtp.password --from-file ~/pw.txt
  hobbs vault set tls.key --from-file key.pem --raw`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return errs.Usagef("vault set needs the entry NAME")
			case len(args) > 1:
				return withHint(errs.Usagef("refusing a secret value on the command line: argv is visible to other processes and kept in shell history"),
					"pipe it on stdin (printf %%s \"$TOKEN\" | hobbs vault set %s), use --from-file FILE, or type it at the prompt", args[0])
			}
			return vault.CheckName(args[0])
		},
		RunE: a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
			name := args[0]
			val, err := readSecret(a.in, a.stdinIsTTY(), a.errOut, name, fromFile, raw)
			if err != nil {
				return err
			}
			defer clear(val)
			created, err := v.Set(name, val)
			if err != nil {
				return err
			}
			verb := "updated"
			if created {
				verb = "stored"
			}
			a.status("%s %s (%s)", verb, name, v.In.Rel(v.In.VaultEntry(name)))
			if p := v.Pending(); p != "" {
				a.warn("an interrupted rotation is pending (%s); finish it with: hobbs vault rotate", p)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&fromFile, "from-file", "", "read the value from `FILE` (\"-\" for stdin)")
	cmd.Flags().BoolVar(&raw, "raw", false, "keep the value byte for byte (do not remove one trailing newline)")
	return cmd
}

func newVaultGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Print a secret on stdout (exactly, no newline added)",
		Long: `Decrypt vault/data/NAME.age and write the value to stdout byte for byte, with
no trailing newline added. Needs vault/keys, so it fails inside the agent
container: there, secrets arrive only as config.yaml names them (secrets:
bound to hosts, or env:).`,
		Example: `  hobbs vault get github-token | gh auth login --with-token
  export API_KEY="$(hobbs vault get api-key)"`,
		Args: entryNames(cobra.ExactArgs(1)),
		RunE: a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
			val, err := v.Get(args[0])
			if err != nil {
				return err
			}
			defer clear(val)
			_, err = a.rawOut.Write(val) // exact, even to a terminal
			return err
		}),
	}
}

func newVaultListCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List entry names, sizes, dates and uses (never values)",
		Long: `List the vault's entries: name, size of the encrypted file in bytes, when
the value was last set (UTC), and the variables config.yaml gives it to: bound
to hosts (secrets:, the agent holds a placeholder) or in the agent's
environment (env:). Values are never shown. Works inside the agent container
too (without uses: config.yaml is not there).`,
		Example: "  hobbs vault list\n  hobbs vault list --json | jq -r '.[].name'",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(cmd, "print entries as JSON")
	cmd.RunE = a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
		es, ignored, err := v.List()
		if err != nil {
			return err
		}
		for _, p := range ignored {
			a.warn("%s is not a vault entry (ignored)", p)
		}
		cfg, _ := a.config(v.In) // none inside the container, where it is not mounted
		listed := vault.WithUses(es, cfg)
		return printTable(out, listed, "no entries (add one: hobbs vault set NAME)", vault.ListColumns, vault.Listed.Row)
	})
	return cmd
}

func newVaultRmCmd(a *app) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove an entry (kept encrypted in vault/removed unless --purge)",
		Long: `Take an entry out of the vault. The encrypted file moves to
vault/removed/NAME.TIME.age, so a mistake can be undone by moving it back.
--purge deletes it instead.`,
		Example: "  hobbs vault rm old-token\n  hobbs vault rm leaked-token --purge",
		Args:    entryNames(cobra.ExactArgs(1)),
		RunE: a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
			moved, err := v.Remove(args[0], purge)
			if err != nil {
				return err
			}
			if purge {
				a.status("removed %s (deleted)", args[0])
			} else {
				a.status("removed %s (kept encrypted at %s)", args[0], moved)
			}
			a.warnMapped(v, args[0], "")
			return nil
		}),
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "delete the encrypted file instead of moving it to vault/removed")
	return cmd
}

func newVaultRenameCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "rename OLD NEW",
		Short:   "Rename an entry (never replaces one)",
		Example: "  hobbs vault rename gh-token github-token",
		Args:    entryNames(cobra.ExactArgs(2)),
		RunE: a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
			if err := v.Rename(args[0], args[1]); err != nil {
				return err
			}
			a.status("renamed %s to %s", args[0], args[1])
			a.warnMapped(v, args[0], args[1])
			return nil
		}),
	}
}

// warnMapped warns, after vault rm or rename took entry name away, about each
// variable config.yaml still maps to it: hobbs run refuses to start until the
// mapping changes. The entry is gone either way; the warning does not change
// the exit status. A config that does not load is named, never rewritten.
func (a *app) warnMapped(v *vault.Vault, name, renamedTo string) {
	cfg, err := a.config(v.In)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		a.warn("could not check whether config.yaml maps %s: %s", name, msg)
		return
	}
	for _, d := range cfg.Dangling(name, renamedTo) {
		fix := "store it again (hobbs vault set " + name + ") or change " + d.Key + " in config.yaml"
		if renamedTo != "" {
			fix = "set " + d.Key + " to " + d.To + " in config.yaml"
		}
		a.warn("config.yaml maps %s to vault:%s, which is no longer in the vault: hobbs run will fail; %s", d.Variable, name, fix)
	}
}

func newVaultRecipientsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recipients",
		Short: "Manage the public keys entries are encrypted to",
		Long: `Every entry is encrypted to the vault identity and to each public key in
vault/keys/recipients.txt — a second device, an offline backup key. Adding or
removing a key re-encrypts every entry (the identity must be available).`,
		Example: `  hobbs vault recipients list
  hobbs vault recipients add age1... --label "backup key"
  hobbs vault recipients rm age1...`,
	}
	var label string
	add := &cobra.Command{
		Use:   "add PUBLIC-KEY",
		Short: "Encrypt every entry to one more public key",
		Long: `Add an age X25519 public key (age1…, as printed by age-keygen) and re-encrypt
every entry to it. Public keys are not secret, so the key is given as an
argument. If interrupted, run the same command again.`,
		Example: `  age-keygen -o backup.txt && hobbs vault recipients add "$(age-keygen -y backup.txt)" --label backup`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
			if err := v.AddRecipient(args[0], label); err != nil {
				return err
			}
			a.status("added %s; every entry is now encrypted to it", args[0])
			return nil
		}),
	}
	add.Flags().StringVar(&label, "label", "", "a note saying whose key it is")
	list := &cobra.Command{
		Use:     "list",
		Short:   "List recipient public keys and their labels",
		Example: "  hobbs vault recipients list\n  hobbs vault recipients list --json",
		Args:    usageArgs(cobra.NoArgs),
	}
	out := a.jsonFlag(list, "print recipients as JSON")
	list.RunE = a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
		rs, err := v.Recipients()
		if err != nil {
			return err
		}
		if rs == nil {
			rs = []vault.Recipient{}
		}
		return out.print(rs, func(w io.Writer) error {
			for _, r := range rs {
				fmt.Fprintln(w, r)
			}
			return nil
		})
	})
	rm := &cobra.Command{
		Use:     "rm PUBLIC-KEY",
		Short:   "Stop encrypting entries to a public key",
		Long:    "Remove a public key and re-encrypt every entry without it. The vault's own identity cannot be removed; rotate replaces it.",
		Example: "  hobbs vault recipients rm age1...",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
			if err := v.RemoveRecipient(args[0]); err != nil {
				return err
			}
			a.status("removed %s; entries are no longer encrypted to it", args[0])
			return nil
		}),
	}
	cmd.AddCommand(add, list, rm)
	return cmd
}

func newVaultRotateCmd(a *app) *cobra.Command {
	var opt vault.RotateOptions
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the identity and re-encrypt every entry",
		Long: `Generate a new identity, re-encrypt every entry to it, and retire the old one
to vault/keys/retired/ (kept so backups made before can still be read; delete
it when you no longer need them).

At every moment of a rotation every entry decrypts with
vault/keys/identity.txt. If a rotation is interrupted (crash, Ctrl-C, a full
disk), run hobbs vault rotate again: it finishes the interrupted one.

The new identity is protected like the old one; --passphrase sets a new
passphrase, --no-passphrase stores it unprotected.`,
		Example: "  hobbs vault rotate\n  hobbs vault rotate --passphrase",
		Args:    usageArgs(cobra.NoArgs),
	}
	cmd.Flags().BoolVar(&opt.SetPassphrase, "passphrase", false, "protect the new identity with a new passphrase")
	cmd.Flags().BoolVar(&opt.NoPassphrase, "no-passphrase", false, "store the new identity without a passphrase")
	out := a.jsonFlag(cmd, "print the result as JSON")
	cmd.RunE = a.withVault(func(cmd *cobra.Command, args []string, v *vault.Vault) error {
		if p := v.Pending(); p != "" {
			a.status("resuming an interrupted rotation (%s)", p)
		}
		res, err := v.Rotate(opt)
		if err != nil {
			return err
		}
		return out.printLine(res, res.NewKey, func() {
			a.status("re-encrypted %s; old identity retired to %s", style.N(res.Entries, "entry", "entries"), res.Retired)
		})
	})
	return cmd
}

// Package vault keeps the instance's secrets: small values (tokens, passwords)
// encrypted with age (filippo.io/age) to keys that never enter the agent's
// container.
//
// # Model
//
// The vault has one identity, an age X25519 key pair. Every entry is a plain
// age file encrypted to the identity's public key and to any extra recipients
// the user added (a second device, an offline backup key). Decryption needs the
// identity, which lives in vault/keys. The launcher mounts over vault/keys in
// the agent container, so the agent can list entry names but cannot decrypt
// anything; secrets reach the agent only as environment variables that
// config.yaml maps to entries ("env: {GITHUB_TOKEN: vault:github-token}"),
// decrypted on the host in memory by SessionEnv when a session starts.
//
// Plaintext never touches the disk: values are encrypted in memory and the
// ciphertext is written atomically through safefile (whose temp files hold
// ciphertext only). A passphrase-protected identity is stored encrypted too.
// Every access (set, get, rm, rename, recipients, rotate, session) is appended
// to the audit log by entry name, with the actor (host or container); values
// are never logged.
//
// # Layout
//
//	vault/keys/identity.txt       the identity: age-keygen's layout ("# created:",
//	                              "# public key:", AGE-SECRET-KEY-1…), 0600; with a
//	                              passphrase, that text age-encrypted (scrypt, armored)
//	vault/keys/recipients.txt     public keys entries are encrypted to, one per line;
//	                              a "#" line directly above a key is its label
//	vault/keys/identity.next.txt  only during a rotation: the new identity
//	vault/keys/identity.prev.txt  only during a rotation: the old identity
//	vault/keys/retired/           identities replaced by rotate (to read old backups)
//	vault/data/NAME.age           one entry (binary age format)
//	vault/removed/NAME.TIME.age   entries removed without --purge, still encrypted
//
// The files are standard age: "age -d -i vault/keys/identity.txt
// vault/data/NAME.age" prints the value, and "age -R vault/keys/recipients.txt"
// encrypts a new one by hand.
//
// # Names
//
// An entry name is 1 to 64 characters from a-z, 0-9, ".", "_" and "-",
// starting with a letter or a digit (the same rule config.yaml applies to
// "vault:NAME"). So a name is never a path: no "/", no "..", no leading dot,
// no NUL, no upper case (which would collide on case-insensitive file
// systems), and no Unicode look-alikes. Anything else is refused with the rule.
//
// # Rotation
//
// Rotate replaces the identity and re-encrypts every entry. It is built so
// that at every instant every entry decrypts with vault/keys/identity.txt (the
// key on record), and re-running rotate after an interruption finishes the job:
//
//  1. Create identity.next.txt (a new key; kept if it already exists, so a
//     resumed rotation reuses it).
//  2. Re-encrypt every entry to old + new + extra recipients. identity.txt is
//     still the old key, which decrypts all of them.
//  3. Copy identity.txt to identity.prev.txt, then rename identity.next.txt
//     over identity.txt. Every entry is already encrypted to the new key.
//  4. Replace the old public key by the new one in recipients.txt.
//  5. Re-encrypt every entry to new + extra recipients only, dropping the old
//     key.
//  6. Move identity.prev.txt to keys/retired/.
//
// Which files exist says where an interrupted rotation stopped: next without
// prev means step 2, both mean step 3, prev alone means steps 4–5. Every
// write is atomic (temp file, fsync, rename), so an entry is either in its old
// or its new encryption, and both decrypt with the key on record. While a
// rotation is pending, set encrypts to every key on record so new entries
// follow the same rule, and get tries every key on record.
//
// Adding or removing a recipient re-encrypts every entry first and rewrites
// recipients.txt last, so an interrupted change is finished by running it again.
//
// All writers serialise on the instance lock "vault".
package vault

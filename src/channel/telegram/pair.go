package telegram

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
)

// CodeTTL is how long a pairing code is valid.
const CodeTTL = 10 * time.Minute

// codeAlphabet has no letters or digits that read alike (0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// Pairing is a code made by Pair.
type Pairing struct {
	Code    string    `json:"code"`    // what the owner sends: /start CODE
	Expires time.Time `json:"expires"` // when it stops being valid
}

// Pair makes a one-time pairing code, valid CodeTTL: the owner sends
// `/start CODE` to the bot in a private chat and that chat becomes an owner.
// Only the code's hash is stored (host-only, in o.Dir); it is used once.
// Only o.FS, o.Dir, o.Audit and o.Now are used: pairing needs no token and
// no network.
func Pair(o Options) (Pairing, error) {
	o = o.withDefaults()
	if o.Dir == "" || o.FS.Dir() == "" {
		return Pairing{}, errors.New("telegram: no state directory")
	}
	st := store{fs: o.FS, dir: o.Dir}
	if err := st.init(); err != nil {
		return Pairing{}, err
	}
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Pairing{}, err
	}
	var b strings.Builder
	for i, c := range raw {
		if i > 0 && i%4 == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(codeAlphabet[int(c)%len(codeAlphabet)])
	}
	now := o.Now()
	p := Pairing{Code: b.String(), Expires: now.Add(CodeTTL)}
	err := st.update(func(s *state) error {
		s.prune(now)
		s.Codes = append(s.Codes, pairCode{Hash: codeHash(p.Code), Expires: p.Expires})
		return nil
	})
	o.Audit.Record(audit.Entry{Event: "telegram.pair.code", Detail: map[string]any{"expires": p.Expires.UTC().Format(time.RFC3339)}}, err)
	if err != nil {
		return Pairing{}, err
	}
	return p, nil
}

// normaliseCode lets the owner type the code in any case, with or without
// its dashes or spaces.
func normaliseCode(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r != '-' && r != ' ' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func codeHash(code string) string {
	h := sha256.Sum256([]byte("hobbs-telegram-pair:" + normaliseCode(code)))
	return hex.EncodeToString(h[:])
}

// redeem pairs chat with code if a pending code matches and has not
// expired: the code is removed (single use) and the chat added to the
// owners. It reports whether it paired.
func (s *state) redeem(code string, chat int64, now time.Time) bool {
	if normaliseCode(code) == "" {
		return false
	}
	h := codeHash(code)
	for i, c := range s.Codes {
		if subtle.ConstantTimeCompare([]byte(c.Hash), []byte(h)) == 1 {
			if !now.Before(c.Expires) {
				return false
			}
			s.Codes = append(s.Codes[:i], s.Codes[i+1:]...)
			if !s.isOwner(chat) {
				s.Owners = append(s.Owners, chat)
			}
			return true
		}
	}
	return false
}

// Owners lists the paired chats. Only o.FS and o.Dir are used.
func Owners(o Options) ([]int64, error) {
	s, err := (store{fs: o.FS, dir: o.Dir}).load()
	if err != nil {
		return nil, err
	}
	return s.Owners, nil
}

// Unpair removes chat from the owners: the host's way to drop a lost or
// compromised chat (no chat can). Only o.FS, o.Dir, o.Audit and o.Now are
// used; it reports whether chat was an owner.
func Unpair(o Options, chat int64) (bool, error) {
	o = o.withDefaults()
	found := false
	err := (store{fs: o.FS, dir: o.Dir}).update(func(s *state) error {
		for i, c := range s.Owners {
			if c == chat {
				s.Owners = append(s.Owners[:i], s.Owners[i+1:]...)
				found = true
				return nil
			}
		}
		return errNoChange
	})
	if errors.Is(err, errNoChange) {
		return false, nil
	}
	o.Audit.Record(audit.Entry{Event: "telegram.unpair", Subject: "chat:" + strconv.FormatInt(chat, 10)}, err)
	return found, err
}

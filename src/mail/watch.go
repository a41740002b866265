package mail

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// State is how far a mailbox was read: kept durably by the caller, so a
// restart or a reconnection goes on after the last message handled,
// missing none and handling none twice.
type State struct {
	UIDValidity uint32 `json:"uid_validity"`
	LastUID     uint32 `json:"last_uid"`
}

// Fetched is one new message of the mailbox.
type Fetched struct {
	UIDValidity uint32
	UID         uint32
	Size        int64
	Raw         []byte // nil when Size is over the cap
}

// Status is what a Watcher reports of the mailbox's health.
type Status struct {
	Kind string // StatusUp, StatusDown, StatusUIDValidity
	Err  error  // StatusDown: why
	Auth bool   // StatusDown: the server refused the login
	// StatusUIDValidity: the old and new UIDVALIDITY.
	Old, New uint32
}

// Status kinds.
const (
	StatusUp          = "up"           // logged in and watching (after a start or a StatusDown)
	StatusDown        = "down"         // a connection or login failed
	StatusUIDValidity = "uid-validity" // the mailbox was recreated: its old UIDs mean nothing
	StatusCaughtUp    = "caught-up"    // every message so far was handed over, none is held
)

// Watcher watches one mailbox folder for new messages.
type Watcher struct {
	Addr     string // HOST:PORT
	TLS      string // config.TLSImplicit, TLSStartTLS, TLSNone
	User     string
	Password string
	Folder   string
	// Poll is how often a server without IDLE is asked; with IDLE, how
	// often the watcher checks anyway.
	Poll       time.Duration
	MaxMessage int64
	TLSConfig  *tls.Config // nil: the system's roots, ServerName from Addr
	// Load and Save keep the State.
	Load func() (State, error)
	Save func(State) error
	// Handle takes one new message, in UID order. An error stops the
	// session (the message is offered again after the reconnection);
	// seen true marks it \Seen on the server, false leaves it unread.
	// ErrHold holds the mailbox at this message: it and every later one
	// wait, unread, until Ready says they may be taken.
	Handle func(ctx context.Context, f Fetched) (seen bool, err error)
	// Ready reports whether a held message may be offered again (nil:
	// at once). It is asked every HoldRetry (0: 5s), cheaply: nothing is
	// fetched until it says yes.
	Ready     func() bool
	HoldRetry time.Duration
	// Report is told of the mailbox's health (nil: nothing).
	Report func(Status)
	// Backoff bounds the wait before a reconnection (0: 1s and 5m);
	// AuthBackoff is the wait after a refused login (0: 30m).
	MinBackoff, MaxBackoff, AuthBackoff time.Duration
	// NoIdle polls even where the server offers IDLE.
	NoIdle bool
}

// ErrHold is Handle's answer for a message that cannot be taken yet but
// must not be lost (its run may not start now).
var ErrHold = errors.New("the message waits")

// ErrAuth is a login the server refused.
var ErrAuth = errors.New("the server refused the login")

// Run watches until ctx ends: a failed connection or login is retried
// with backoff (doubling to MaxBackoff; a refused login waits
// AuthBackoff), and reported once as down, then once as up again.
func (w *Watcher) Run(ctx context.Context) error {
	minB, maxB, authB := w.MinBackoff, w.MaxBackoff, w.AuthBackoff
	if minB == 0 {
		minB = time.Second
	}
	if maxB == 0 {
		maxB = 5 * time.Minute
	}
	if authB == 0 {
		authB = 30 * time.Minute
	}
	backoff := minB
	down := false
	for ctx.Err() == nil {
		up := false
		err := w.session(ctx, func() {
			up = true
			backoff = minB
			if down {
				down = false
			}
			w.report(Status{Kind: StatusUp})
		})
		if ctx.Err() != nil {
			return nil
		}
		wait := backoff
		if errors.Is(err, ErrAuth) {
			wait = authB
		} else if !up {
			backoff = min(backoff*2, maxB)
		}
		if !down || up {
			down = true
			w.report(Status{Kind: StatusDown, Err: err, Auth: errors.Is(err, ErrAuth)})
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return nil
}

func (w *Watcher) report(s Status) {
	if w.Report != nil {
		w.Report(s)
	}
}

// dial connects as w.TLS says.
func (w *Watcher) dial(opt *imapclient.Options) (*imapclient.Client, error) {
	host, _, _ := net.SplitHostPort(w.Addr)
	opt.TLSConfig = w.TLSConfig
	if opt.TLSConfig == nil {
		opt.TLSConfig = TLSConfig(host, nil)
	}
	opt.Dialer = &net.Dialer{Timeout: 30 * time.Second}
	switch w.TLS {
	case "none":
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, errors.New("refusing to send a password in the clear to a host that is not loopback")
		}
		return imapclient.DialInsecure(w.Addr, opt)
	case "starttls":
		return imapclient.DialStartTLS(w.Addr, opt)
	}
	return imapclient.DialTLS(w.Addr, opt)
}

// session is one connection: log in, select, catch up, then wait for new
// mail (IDLE or polling) and catch up again, until the connection fails
// or ctx ends.
func (w *Watcher) session(ctx context.Context, loggedIn func()) error {
	news := make(chan struct{}, 1)
	wake := func() {
		select {
		case news <- struct{}{}:
		default:
		}
	}
	c, err := w.dial(&imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				wake()
			}
		},
	}})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", w.Addr, tlsError(err))
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := c.Login(w.User, w.Password).Wait(); err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) && (ie.Type == imap.StatusResponseTypeNo || ie.Code == imap.ResponseCodeAuthenticationFailed) {
			return fmt.Errorf("%w: %s", ErrAuth, ie.Text)
		}
		return fmt.Errorf("log in to %s: %w", w.Addr, err)
	}
	sel, err := c.Select(w.Folder, nil).Wait()
	if err != nil {
		return fmt.Errorf("select %s: %w", w.Folder, err)
	}
	st, err := w.Load()
	if err != nil {
		return err
	}
	switch {
	case st.UIDValidity == 0:
		// The first look: mail already there is not new.
		st = State{UIDValidity: sel.UIDValidity, LastUID: uint32(sel.UIDNext) - 1}
		if sel.UIDNext == 0 {
			st.LastUID = 0
		}
		if err := w.Save(st); err != nil {
			return err
		}
	case st.UIDValidity != sel.UIDValidity:
		w.report(Status{Kind: StatusUIDValidity, Old: st.UIDValidity, New: sel.UIDValidity})
		st = State{UIDValidity: sel.UIDValidity, LastUID: uint32(sel.UIDNext) - 1}
		if sel.UIDNext == 0 {
			st.LastUID = 0
		}
		if err := w.Save(st); err != nil {
			return err
		}
	}
	loggedIn()
	idle := c.Caps().Has(imap.CapIdle) && !w.NoIdle
	held := false
	for {
		if !held || w.ready() {
			if st, held, err = w.catchUp(ctx, c, st); err != nil {
				return err
			}
			if !held {
				w.report(Status{Kind: StatusCaughtUp})
			}
		}
		if !idle {
			if err := w.wait(ctx, c, news, held); err != nil {
				return err
			}
			if err := c.Noop().Wait(); err != nil {
				return err
			}
			continue
		}
		ic, err := c.Idle()
		if err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		werr := w.wait(ctx, c, news, held)
		if errors.Is(werr, errClosed) {
			return werr
		}
		if err := ic.Close(); err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		if err := ic.Wait(); err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

var errClosed = errors.New("the server closed the connection")

// wait returns when there is new mail, when the poll interval is over,
// or, while the mailbox is held, when Ready says the held message may be
// offered again (new mail alone does not end a hold); an error when ctx
// ends or the server closes the connection.
func (w *Watcher) wait(ctx context.Context, c *imapclient.Client, news <-chan struct{}, held bool) error {
	t := time.NewTimer(w.Poll)
	defer t.Stop()
	var retry <-chan time.Time
	if held {
		every := w.HoldRetry
		if every <= 0 {
			every = 5 * time.Second
		}
		tk := time.NewTicker(every)
		defer tk.Stop()
		retry = tk.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Closed():
			return errClosed
		case <-t.C:
			return nil
		case <-news:
			if !held || w.ready() {
				return nil
			}
		case <-retry:
			if w.ready() {
				return nil
			}
		}
	}
}

func (w *Watcher) ready() bool { return w.Ready == nil || w.Ready() }

// fetchBatch bounds the messages one catch-up reads before it saves.
const fetchBatch = 200

// catchUp hands every message after st.LastUID to Handle, in UID order,
// saving the state after each; held is a message Handle held (ErrHold),
// at which it stops without moving past it.
func (w *Watcher) catchUp(ctx context.Context, c *imapclient.Client, st State) (_ State, held bool, _ error) {
	for {
		var set imap.UIDSet
		set.AddRange(imap.UID(st.LastUID+1), 0)
		msgs, err := c.Fetch(set, &imap.FetchOptions{UID: true, RFC822Size: true}).Collect()
		if err != nil {
			return st, false, fmt.Errorf("fetch: %w", err)
		}
		var uids []*imapclient.FetchMessageBuffer
		for _, m := range msgs {
			if uint32(m.UID) > st.LastUID { // "N:*" also answers the last message when none is newer
				uids = append(uids, m)
			}
		}
		if len(uids) == 0 {
			return st, false, nil
		}
		sortByUID(uids)
		if len(uids) > fetchBatch {
			uids = uids[:fetchBatch]
		}
		for _, m := range uids {
			if ctx.Err() != nil {
				return st, false, ctx.Err()
			}
			f := Fetched{UIDValidity: st.UIDValidity, UID: uint32(m.UID), Size: m.RFC822Size}
			if m.RFC822Size <= w.MaxMessage {
				sec := &imap.FetchItemBodySection{Peek: true}
				bs, err := c.Fetch(imap.UIDSetNum(m.UID), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{sec}}).Collect()
				if err != nil {
					return st, false, fmt.Errorf("fetch %d: %w", m.UID, err)
				}
				if len(bs) == 1 {
					f.Raw = bs[0].FindBodySection(sec)
				}
				if f.Raw == nil {
					f.Raw = []byte{}
				}
			}
			seen, err := w.Handle(ctx, f)
			if errors.Is(err, ErrHold) {
				return st, true, nil
			}
			if err != nil {
				return st, false, err
			}
			// Saved before anything else can fail: a handled message is
			// never handed over again.
			st.LastUID = uint32(m.UID)
			if err := w.Save(st); err != nil {
				return st, false, err
			}
			if seen {
				flags := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}
				if err := c.Store(imap.UIDSetNum(m.UID), flags, nil).Close(); err != nil {
					return st, false, fmt.Errorf("mark %d seen: %w", m.UID, err)
				}
			}
		}
	}
}

func sortByUID(ms []*imapclient.FetchMessageBuffer) {
	slices.SortFunc(ms, func(a, b *imapclient.FetchMessageBuffer) int { return cmp.Compare(a.UID, b.UID) })
}

package egress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/hobbs-agent/hobbs/src/instance"
	"github.com/hobbs-agent/hobbs/src/safefile"
)

// watcher reloads the policy when one of its files changes. It watches the
// files' directories, not the files: editors and `hobbs policy allow` save
// by writing a new file and renaming it over the old one, which a watch on
// the old inode would miss. Events are debounced. A slow poll of the files'
// identity (size, mtime, inode) backs fsnotify up for filesystems that do
// not deliver events (some bind mounts). A change made after the policy in
// force was read and before the watch began is found when it begins, by
// the files' content (policySum): no event or later poll would show it.
type watcher struct {
	w      *fsnotify.Watcher
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Watch starts reloading the policy on change until ctx ends or Shutdown.
func (s *Server) Watch(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	files := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range s.opts.PolicyFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			fw.Close()
			return err
		}
		files[abs] = true
		dirs[filepath.Dir(abs)] = true
	}
	for d := range dirs {
		if err := fw.Add(d); err != nil {
			fw.Close()
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{w: fw, cancel: cancel, done: make(chan struct{})}
	s.watch = w
	go func() {
		defer close(w.done)
		defer fw.Close()
		var timer *time.Timer
		var fire <-chan time.Time
		poll := time.NewTicker(2 * time.Second)
		defer poll.Stop()
		last := statAll(s.opts.PolicyFiles)
		if policySum(s.opts.PolicyFiles) != *s.loadedSum.Load() {
			s.Reload()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if !files[ev.Name] {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(s.opts.Debounce)
				} else {
					timer.Reset(s.opts.Debounce)
				}
				fire = timer.C
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				s.opts.Logf("policy watch: %v", err)
			case <-fire:
				fire = nil
				last = statAll(s.opts.PolicyFiles)
				s.Reload()
			case <-poll.C:
				if now := statAll(s.opts.PolicyFiles); now != last {
					last = now
					s.Reload()
				}
			}
		}
	}()
	return nil
}

func (w *watcher) stop() {
	w.once.Do(func() {
		w.cancel()
		<-w.done
	})
}

// policySum names the files' content (a file that cannot be read by the
// error): what the policy read from them was read from.
func policySum(files []string) string {
	h := sha256.New()
	for _, f := range files {
		b, err := safefile.Beneath(filepath.Dir(f)).ReadFile(filepath.Base(f), instance.MaxTextFile)
		if err != nil {
			b = []byte("error: " + err.Error())
		}
		fmt.Fprintf(h, "%d:%s;", len(b), b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// statAll is a cheap fingerprint of the files' identities.
func statAll(files []string) string {
	var b []byte
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b = append(b, "missing;"...)
			continue
		}
		b = append(b, fi.ModTime().String()...)
		b = append(b, byte(fi.Size()), byte(fi.Size()>>8), ';')
		b = append(b, inode(fi)...)
	}
	return string(b)
}

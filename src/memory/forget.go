package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/hobbs-agent/hobbs/src/audit"
	"github.com/hobbs-agent/hobbs/src/errs"
	"github.com/hobbs-agent/hobbs/src/instance"
)

// ForgetResult says what Forget did.
type ForgetResult struct {
	ID string `json:"id"`
	// Path is the file removed, relative to the instance; empty when no file
	// held the memory any more (forget --purge after a forget, or after the
	// file was removed by hand).
	Path    string `json:"path,omitempty"`
	Tier    Tier   `json:"tier,omitempty"`
	Removed bool   `json:"removed"`
	Purged  bool   `json:"purged"`
	// HistoryLines counts the lines of memory/history.jsonl about the memory
	// that a purge rewrote without its text; HistoryDropped the lines that
	// named it but could not be read, which a purge removes whole.
	HistoryLines   int `json:"history_lines"`
	HistoryDropped int `json:"history_dropped"`
}

// Forget removes the memory id: its file leaves whichever tier holds it.
// Without purge, memory/history.jsonl keeps its lines, text summaries
// included, so the memory can still be read back from there. With purge, the
// history is rewritten (atomically, under the memory lock and the history's
// append lock) with the memory's text taken out of each of its lines, and the
// search index, which holds summaries and trigrams of every file, is dropped
// (it is derived data; the next command rebuilds it).
//
// Forget with purge also works for an id whose file is gone (removed by
// hand, or forgotten earlier without purge): the history and index are
// cleaned all the same. Other memories' links to id (supersedes,
// superseded_by) are left as they are; Lint does not count a link to a
// forgotten memory as broken. The history line and the audit entry of a
// forget name the id, never the text.
func (s *Store) Forget(id string, purge bool) (*ForgetResult, error) {
	if !ValidID(id) {
		return nil, errs.Usagef("invalid memory id %q", id).Advise(BadIDAll)
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := s.lookup(id)
	if err != nil {
		var e *errs.Error
		// A file named like id that does not parse: its error wraps no
		// cause (a failure to read or to open the index does).
		if errors.As(err, &e) && e.Code == errs.Failure && e.Err == nil {
			return nil, &errs.Error{Code: e.Code, Msg: e.Msg, Err: e.Err,
				Advice: errs.NewAdvice(ForgetUnreadable, "id", id)}
		}
		return nil, err
	}
	res := &ForgetResult{ID: id, Purged: purge}
	if m == nil {
		if !purge {
			return nil, errs.Failf("no memory %s", id).
				Advise(NoMemoryToForget, "id", id)
		}
		known, err := s.historyNames(id)
		if err != nil {
			return nil, err
		}
		if !known {
			return nil, errs.Failf("no memory %s, and the history does not name it", id).
				Advise(NoMemory)
		}
	} else {
		if err := s.fs().Remove(m.Path); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "forget %s", id)
		}
		res.Path, res.Tier, res.Removed = s.In.Rel(m.Path), m.Tier, true
	}
	h := HistoryEntry{Time: s.now(), Op: "forget", ID: id, Path: res.Path, Actor: audit.Actor(), Purged: purge}
	if purge {
		if res.HistoryLines, res.HistoryDropped, err = s.purgeHistory(id, h); err != nil {
			return nil, err
		}
		if err := s.dropIndex(); err != nil {
			return nil, errs.Wrap(errs.Failure, err, "memory index")
		}
	} else if err := s.appendHistory(h); err != nil {
		return nil, err
	}
	detail := map[string]any{"purge": purge}
	if res.Path != "" {
		detail["path"] = res.Path
	}
	if purge {
		detail["history_lines"] = res.HistoryLines
		detail["history_dropped"] = res.HistoryDropped
	}
	return res, s.Audit.Log(audit.Entry{Event: "memory.forget", Subject: id, Outcome: "ok", Detail: detail})
}

// historyNames reports whether memory/history.jsonl has a line about id.
func (s *Store) historyNames(id string) (bool, error) {
	data, err := s.fs().ReadFile(s.In.MemoryHistory(), instance.MaxHistoryFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, errs.Wrap(errs.Failure, err, "memory history")
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if _, about, _ := historyLineAbout(line, id); about {
			return true, nil
		}
	}
	return false, nil
}

// historyLineAbout decodes one history line and says whether it is about
// id (its "id" is id). A line that does not decode strictly as a
// HistoryEntry (hand-edited, unknown keys) is about id when it contains the
// id at all: it cannot be cleaned key by key, so a purge drops it.
func historyLineAbout(line []byte, id string) (h *HistoryEntry, about, readable bool) {
	if !bytes.Contains(line, []byte(id)) {
		return nil, false, true
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var e HistoryEntry
	if err := dec.Decode(&e); err != nil || dec.More() {
		return nil, true, false
	}
	return &e, e.ID == id, true
}

// purgeHistory rewrites memory/history.jsonl with every line about id
// stripped of the memory's text (marked purged), every unreadable line
// naming id left out, and last appends the forget line h. Other lines stay
// byte for byte. The rewrite replaces the file atomically while holding the
// history's append lock, so no line appended meanwhile is lost.
func (s *Store) purgeHistory(id string, h HistoryEntry) (cleaned, dropped int, err error) {
	root, path := s.fs(), s.In.MemoryHistory()
	if err := root.MkdirAll(s.In.MemoryDir(), 0o755); err != nil {
		return 0, 0, errs.Wrap(errs.Failure, err, "memory history")
	}
	unlock, err := root.Lock(path+".lock", 10*time.Second)
	if err != nil {
		return 0, 0, errs.Wrap(errs.Failure, err, "memory history")
	}
	defer unlock()
	data, err := root.ReadFile(path, instance.MaxHistoryFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, errs.Wrap(errs.Failure, err, "memory history")
	}
	var out bytes.Buffer
	out.Grow(len(data) + 256)
	for len(data) > 0 {
		line := data
		rest := []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest = data[:i], data[i+1:]
		}
		data = rest
		e, about, readable := historyLineAbout(line, id)
		switch {
		case !about:
			out.Write(line)
			out.WriteByte('\n')
		case !readable:
			dropped++
		default:
			for _, sn := range []*Snapshot{e.Before, e.After} {
				if sn != nil {
					sn.Text = ""
				}
			}
			e.Purged = true
			b, err := audit.MarshalLine(e)
			if err != nil {
				return 0, 0, err
			}
			out.Write(b)
			cleaned++
		}
	}
	b, err := audit.MarshalLine(h)
	if err != nil {
		return 0, 0, err
	}
	out.Write(b)
	if err := root.Write(path, out.Bytes(), 0o644); err != nil {
		return 0, 0, errs.Wrap(errs.Failure, err, "memory history")
	}
	return cleaned, dropped, nil
}

// dropIndex removes the files of the search index (memory/.index), which
// hold a summary and the trigrams of every memory file. Links and special
// files there are left alone (the store reports them).
func (s *Store) dropIndex() error {
	root, dir := s.fs(), s.In.MemoryIndex()
	ents, err := root.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := root.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// forgottenIDs returns the ids memory/history.jsonl records as forgotten.
func (s *Store) forgottenIDs() map[string]bool {
	out := map[string]bool{}
	data, err := s.fs().ReadFile(s.In.MemoryHistory(), instance.MaxHistoryFile)
	if err != nil {
		return out
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"op":"forget"`)) {
			continue
		}
		var e HistoryEntry
		if json.Unmarshal(line, &e) == nil && e.Op == "forget" && e.ID != "" {
			out[e.ID] = true
		}
	}
	return out
}

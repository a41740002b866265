package safefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.md")
	if err := Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temp files left: %v", ents)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := Beneath(dir).Create("f", []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Beneath(dir).Create("f", []byte("b"), 0o600)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("want ErrExist, got %v", err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "a" {
		t.Fatalf("overwritten: %q", b)
	}
}

func TestLockSerialises(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "x.lock")
	counter := filepath.Join(dir, "n")
	os.WriteFile(counter, []byte(""), 0o600)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := Lock(lock, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer unlock()
			b, _ := os.ReadFile(counter)
			time.Sleep(time.Millisecond)
			Write(counter, append(b, 'x'), 0o600)
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(counter)
	if len(b) != 20 {
		t.Fatalf("lost updates: %d of 20", len(b))
	}
}

func TestLockTimeout(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	// flock locks belong to the open file description, so a second open in
	// the same process contends like another process would.
	_, err = Lock(lock, 30*time.Millisecond)
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("want timeout, got %v", err)
	}
}

func TestAppendWholeLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := bytes.Repeat([]byte("a"), 5000)
			if err := Append(p, append(line, '\n'), 0o600); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if len(l) != 5000 {
			t.Fatalf("interleaved line of %d bytes", len(l))
		}
	}
}

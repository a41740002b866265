package userscope

import (
	"archive/tar"
	"bytes"
	"fmt"
	"testing"
)

// benchStream is a state directory of n files of size bytes under dir.
func benchStream(b *testing.B, dir string, n, size int) []byte {
	b.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := bytes.Repeat([]byte(`{"type":"user","text":"a line of a conversation"}`+"\n"), size/50+1)[:size]
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("state/%s/f%d.jsonl", dir, i), Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(size)}); err != nil {
			b.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			b.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReadTranscripts reads 64 MiB of transcripts (hashed as they
// pass) and, for the ratio, 64 MiB of other files listed by size.
func BenchmarkReadTranscripts(b *testing.B) {
	for _, dir := range []string{"projects/-w", "cache"} {
		s := benchStream(b, dir, 64, 1<<20)
		b.Run(dir, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if _, err := Read(bytes.NewReader(s), "state", DefaultLimits, InScope); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

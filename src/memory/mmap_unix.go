//go:build unix

package memory

import (
	"os"
	"syscall"
)

// mapFile maps path read-only. The returned release unmaps it. An empty file
// maps to an empty slice.
func mapFile(path string) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() == 0 {
		return []byte{}, func() {}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, nil, err
		}
		return b, func() {}, nil
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}

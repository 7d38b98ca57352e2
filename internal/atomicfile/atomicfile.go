// Package atomicfile writes files through temporary files that are
// renamed into place when written in full, with the permissions a plain
// os.Create would give: 0666 less the process's umask (0644 under the
// usual 022), where os.CreateTemp gives 0600 whatever the umask.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// CreateTemp creates a new file named prefix + a random suffix in dir,
// open for writing, with mode 0666 less the umask.
func CreateTemp(dir, prefix string) (*os.File, error) {
	var b [8]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, prefix+"*"), Err: fs.ErrExist}
}

// Write replaces path with what write writes to f, a new temporary file in
// path's folder (named "."+base+".tmp-" and a random suffix), which is
// synced, closed and renamed onto path only when write succeeded. On any
// error the temporary file is removed and path is left as it was.
func Write(path string, write func(f *os.File) error) (err error) {
	f, err := CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

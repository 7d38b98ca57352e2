// Package regfile opens the files a run reads back from its own folders
// (a checkpoint's files, a saved model's, the output folder's
// metrics.jsonl and rollouts.jsonl, which it also appends to) so that a file replaced by something that is not a
// regular file can never hang or flood the reader: a named pipe is opened
// without waiting for a writer (O_NONBLOCK where the system has it) and
// refused, as are devices (a link to /dev/zero), sockets and folders, and
// ReadFile reads no more than a bound. The type is checked on the opened
// file (fstat), so a file swapped between a check and the open cannot
// slip through.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file (or a link to one).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by ReadFile's error for a file over its bound.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading, following symbolic links, and returns it
// only when it is a regular file. Opening never blocks on a named pipe
// where the system supports non-blocking opens (every Unix; Windows has
// no named pipes in its file system). The error names path and, for a
// file that is not regular, wraps ErrNotRegular and says what it is ("a
// named pipe", "a device", ...).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	return checkRegular(f, path)
}

// OpenAppend opens path for appending, creating it with perm (less the
// umask) when missing, and returns it only when it is a regular file: a
// named pipe in its place is refused without waiting for a reader, as in
// Open.
func OpenAppend(path string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|openFlags, perm)
	if err != nil {
		return nil, err
	}
	return checkRegular(f, path)
}

// checkRegular returns f when it is a regular file, else closes it and
// returns an error wrapping ErrNotRegular.
func checkRegular(f *os.File, path string) (*os.File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(st.Mode()))}
	}
	if err := blocking(f); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}

// ReadFile reads the regular file at path (see Open) in full. A file of
// more than limit bytes is an error wrapping ErrTooLarge; no more than
// limit+1 bytes are read even when the file grows while it is read.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, int64(len(data)), limit)
	}
	return data, nil
}

func tooLarge(path string, size, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%d bytes or more, the bound is %d)", ErrTooLarge, size, limit)}
}

// Kind names the type of a file mode that is not a regular file's: "a
// symbolic link", "a named pipe", "a device", "a socket", "a folder".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	case m.IsRegular():
		return "a regular file"
	}
	return m.Type().String()
}

// MaxMeta bounds ReadFile for the JSON and text files of a model or
// checkpoint folder (config.json, tokenizer.json, trainer_state.json,
// manifest.json, ...): 1 GiB, far above any real one.
const MaxMeta = 1 << 30

// MaxLog bounds ReadFile for a run's JSONL logs (metrics.jsonl,
// rollouts.jsonl): 16 GiB.
const MaxLog = 16 << 30

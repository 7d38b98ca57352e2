package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpokit/grpokit/internal/regfile"
)

// ManifestFile lists every other file of a checkpoint with its size and
// SHA-256. Write writes it last, so a checkpoint folder without it is
// incomplete; Verify checks every file against it.
const ManifestFile = "manifest.json"

// ErrCorrupt is wrapped by the errors of a checkpoint that is
// incomplete (no manifest, a missing file) or whose files do not match
// their manifest or cannot be decoded. Test for it with errors.Is.
var ErrCorrupt = errors.New("corrupt checkpoint")

// manifestEntry is one file of a checkpoint.
type manifestEntry struct {
	Path   string `json:"path"` // slash-separated, relative to the checkpoint folder
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// manifest is manifest.json.
type manifest struct {
	Format int             `json:"format"`
	Files  []manifestEntry `json:"files"`
}

// Corruptf returns an error wrapping ErrCorrupt, for a reader of a
// checkpoint's own files to report one that does not decode.
func Corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// regularFile checks, without opening it, that p is a regular file (not a
// symbolic link, named pipe, device or folder: opening a named pipe
// blocks, and a link to /dev/zero reads forever) and returns its size.
func regularFile(p string) (int64, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("not a regular file (%s)", regfile.Kind(st.Mode()))
	}
	return st.Size(), nil
}

// hashFile returns the size and hex SHA-256 of the file at p, syncing it to
// disk first when sync is set (files a Saver wrote may not be synced). p
// must be a regular file; when want ≥ 0 its size must be want, checked
// before it is read, and no more than want bytes are read.
func hashFile(p string, sync bool, want int64) (int64, string, error) {
	size, err := regularFile(p)
	if err != nil {
		return 0, "", err
	}
	if want >= 0 && size != want {
		return size, "", nil // the caller reports the size
	}
	// Opened through regfile: a file swapped for a named pipe or a device
	// since regularFile looked is refused, not waited on or read for ever.
	f, err := regfile.Open(p)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	if sync {
		if err := f.Sync(); err != nil {
			return 0, "", err
		}
	}
	h := sha256.New()
	var n int64
	if want >= 0 {
		n, err = io.CopyN(h, f, want+1) // one byte more shows a file that grew
		if errors.Is(err, io.EOF) {
			err = nil
		}
	} else {
		n, err = io.Copy(h, f)
	}
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// writeManifest syncs and hashes every file under dir (whatever wrote it:
// the trainer, a Saver, later additions such as tokenizer files), syncs
// every folder, then writes manifest.json and syncs it and dir.
func writeManifest(dir string) error {
	m := manifest{Format: 1}
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ManifestFile {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", rel)
		}
		size, sum, err := hashFile(p, true, -1)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, manifestEntry{Path: rel, Size: size, SHA256: sum})
		return nil
	})
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	// Deepest folders first, so each folder's entries are durable before
	// its parent's.
	for i := len(dirs) - 1; i >= 0; i-- {
		SyncDir(dirs[i])
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := WriteFileSync(filepath.Join(dir, ManifestFile), append(data, '\n')); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	SyncDir(dir)
	return nil
}

// parseManifest decodes and checks manifest.json: format 1, clean relative
// paths without duplicates, sizes ≥ 0, 64-digit hex checksums.
func parseManifest(data []byte) (*manifest, error) {
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, Corruptf("%s: %v", ManifestFile, err)
	}
	if m.Format != 1 {
		return nil, Corruptf("%s: unknown format %d", ManifestFile, m.Format)
	}
	seen := map[string]bool{}
	for _, e := range m.Files {
		if e.Path == "" || e.Path != path.Clean(e.Path) || path.IsAbs(e.Path) || e.Path == ".." ||
			strings.HasPrefix(e.Path, "../") || strings.Contains(e.Path, "\\") || e.Path == ManifestFile {
			return nil, Corruptf("%s: bad file name %q", ManifestFile, e.Path)
		}
		if seen[e.Path] {
			return nil, Corruptf("%s: %q listed twice", ManifestFile, e.Path)
		}
		seen[e.Path] = true
		if e.Size < 0 {
			return nil, Corruptf("%s: %s: size %d", ManifestFile, e.Path, e.Size)
		}
		if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != sha256.Size {
			return nil, Corruptf("%s: %s: bad sha256 %q", ManifestFile, e.Path, e.SHA256)
		}
	}
	return &m, nil
}

// readManifest reads the manifest of checkpoint folder dir.
func readManifest(dir string) (*manifest, error) {
	data, err := regfile.ReadFile(filepath.Join(dir, ManifestFile), regfile.MaxMeta)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Corruptf("no %s (the checkpoint is incomplete, or older than manifests)", ManifestFile)
	}
	if err != nil {
		return nil, err
	}
	return parseManifest(data)
}

// checkFiles checks the files of dir against m: with full set, the size and
// SHA-256 of every file; otherwise only that each exists with its size (a
// cheap completeness check). Every mismatch is reported, each naming its
// file.
func checkFiles(dir string, m *manifest, full bool) error {
	var errs []error
	for _, e := range m.Files {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		if !full {
			size, err := regularFile(p)
			switch {
			case err != nil:
				errs = append(errs, Corruptf("%s: %v", e.Path, err))
			case size != e.Size:
				errs = append(errs, Corruptf("%s: %d bytes, the manifest says %d", e.Path, size, e.Size))
			}
			continue
		}
		size, sum, err := hashFile(p, false, e.Size)
		switch {
		case err != nil:
			errs = append(errs, Corruptf("%s: %v", e.Path, err))
		case size != e.Size:
			errs = append(errs, Corruptf("%s: %d bytes, the manifest says %d", e.Path, size, e.Size))
		case sum != e.SHA256:
			errs = append(errs, Corruptf("%s: SHA-256 %s, the manifest says %s", e.Path, sum, e.SHA256))
		}
	}
	return errors.Join(errs...)
}

// Verify checks that checkpoint folder dir is complete (it has a
// manifest, and the manifest lists each file of need) and, with full set,
// that every file matches its size and SHA-256 in the manifest (without
// it, only the sizes are checked). Its errors wrap ErrCorrupt and name the
// file.
func Verify(dir string, full bool, need ...string) error {
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	if err := checkFiles(dir, m, full); err != nil {
		return err
	}
	for _, name := range need {
		if !m.has(name) {
			return Corruptf("%s is not in the manifest", name)
		}
	}
	return nil
}

// has reports whether the manifest lists file name.
func (m *manifest) has(name string) bool {
	for _, e := range m.Files {
		if e.Path == name {
			return true
		}
	}
	return false
}

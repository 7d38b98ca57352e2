package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/grpokit/grpokit/internal/atomicfile"
)

// Folder names in an output folder.
const (
	// Prefix begins the name of a checkpoint folder: checkpoint-<step>.
	Prefix = "checkpoint-"
	// Prefixes of the folders of a checkpoint being written and of one a
	// re-save moved aside; both end in -<step>-<pid>.
	tmpPrefix   = ".tmp-" + Prefix
	asidePrefix = ".old-" + Prefix
)

// ErrNoCheckpoint is wrapped by Latest's error when the output folder
// holds no checkpoint at all (not even a broken one): a first run.
// errors.Is also matches it with fs.ErrNotExist.
var ErrNoCheckpoint error = noCheckpoint{}

type noCheckpoint struct{}

func (noCheckpoint) Error() string        { return "no checkpoint" }
func (noCheckpoint) Is(target error) bool { return target == fs.ErrNotExist }

// Name returns the folder name of the checkpoint of step: checkpoint-<step>.
func Name(step int) string { return Prefix + strconv.Itoa(step) }

// Write writes the checkpoint of step to outputDir/checkpoint-<step> and
// returns its path. fill writes the checkpoint's files into the folder it
// is given (syncing them is not needed); then manifest.json, every file
// with its size and SHA-256, is written last and the folder renamed into
// place, so a crash never leaves a checkpoint that counts as complete but
// is not. Writing a step that already has a checkpoint moves the old one
// aside, renames the new one in, then deletes the old one: at every moment
// one complete copy can be found (see Latest).
//
// stage, when not nil, is called after each stage of the write: "files",
// "manifest", "aside", "renamed" (crash tests end the process there).
func Write(outputDir string, step int, fill func(dir string) error, stage func(name string)) (string, error) {
	if stage == nil {
		stage = func(string) {}
	}
	name := Name(step)
	final := filepath.Join(outputDir, name)
	if err := os.MkdirAll(outputDir, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: write: %w", err)
	}
	tmp := filepath.Join(outputDir, fmt.Sprintf(".tmp-%s-%d", name, os.Getpid()))
	_ = os.RemoveAll(tmp)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: write: %w", err)
	}
	fail := func(err error) (string, error) {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("checkpoint: write %s: %w", final, err)
	}
	if err := fill(tmp); err != nil {
		return fail(err)
	}
	stage("files")
	if err := writeManifest(tmp); err != nil {
		return fail(err)
	}
	stage("manifest")
	if err := swapIn(outputDir, name, tmp, stage); err != nil {
		return fail(err)
	}
	return final, nil
}

// swapIn renames the complete folder tmp to outputDir/name. An existing
// folder of that name is first renamed aside and deleted only once the new
// one is in place.
func swapIn(outputDir, name, tmp string, stage func(string)) error {
	final := filepath.Join(outputDir, name)
	if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(tmp, final); err != nil {
			return err
		}
		SyncDir(outputDir)
		stage("renamed")
		return nil
	}
	aside := filepath.Join(outputDir, fmt.Sprintf(".old-%s-%d", name, os.Getpid()))
	if err := os.RemoveAll(aside); err != nil {
		return err
	}
	if err := os.Rename(final, aside); err != nil {
		return err
	}
	SyncDir(outputDir)
	stage("aside")
	if err := os.Rename(tmp, final); err != nil {
		// Put the old copy back; it is complete.
		_ = os.Rename(aside, final)
		return err
	}
	SyncDir(outputDir)
	stage("renamed")
	return os.RemoveAll(aside)
}

// Dir is a checkpoint folder found in an output folder.
type Dir struct {
	Path string
	Step int
	// Aside marks a copy a re-save moved aside (.old-checkpoint-N-PID),
	// complete when its manifest says so.
	Aside bool
}

// ParseName returns the step of a checkpoint folder name (checkpoint-N,
// or .old-checkpoint-N-PID with aside set).
func ParseName(name string) (step int, aside, ok bool) {
	rest, isAside := strings.CutPrefix(name, asidePrefix)
	if isAside {
		i := strings.LastIndexByte(rest, '-')
		if i < 0 {
			return 0, false, false
		}
		rest = rest[:i]
	} else if rest, ok = strings.CutPrefix(name, Prefix); !ok {
		return 0, false, false
	}
	step, err := strconv.Atoi(rest)
	if err != nil || step < 0 || strconv.Itoa(step) != rest {
		return 0, false, false
	}
	return step, isAside, true
}

// List lists the checkpoint folders of outputDir, newest first (at one
// step, checkpoint-N before a copy moved aside), without checking them.
func List(outputDir string) ([]Dir, error) {
	entries, err := os.ReadDir(outputDir)
	if err != nil {
		return nil, err
	}
	var found []Dir
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		step, aside, ok := ParseName(e.Name())
		if ok {
			found = append(found, Dir{filepath.Join(outputDir, e.Name()), step, aside})
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].Step != found[j].Step {
			return found[i].Step > found[j].Step
		}
		return !found[i].Aside && found[j].Aside
	})
	return found, nil
}

// Status is one checkpoint folder of an output folder, checked.
type Status struct {
	Path string
	Step int
	// Err is nil for a complete checkpoint whose every file matches its
	// manifest (and passes the caller's check); otherwise it says what is
	// wrong and wraps ErrCorrupt.
	Err error
}

// Statuses lists the checkpoint folders of outputDir, newest first, each
// checked by check (nil: Verify with every file hashed).
func Statuses(outputDir string, check func(dir string) error) ([]Status, error) {
	if check == nil {
		check = func(dir string) error { return Verify(dir, true) }
	}
	all, err := List(outputDir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list: %w", err)
	}
	out := make([]Status, len(all))
	for i, c := range all {
		out[i] = Status{Path: c.Path, Step: c.Step, Err: check(c.Path)}
	}
	return out, nil
}

// Latest returns the newest checkpoint of outputDir that check accepts
// (nil: Verify with every file hashed). Broken checkpoints it passes over
// are logged to logger (nil: slog.Default()) at level Warn, each with what
// is wrong. When outputDir holds no checkpoint at all the error wraps
// ErrNoCheckpoint (and fs.ErrNotExist); when it holds only broken ones the
// error names each and wraps what check returned (ErrCorrupt), so a caller
// can tell "nothing to resume" from "cannot resume".
func Latest(outputDir string, check func(dir string) error, logger *slog.Logger) (string, error) {
	if check == nil {
		check = func(dir string) error { return Verify(dir, true) }
	}
	if logger == nil {
		logger = slog.Default()
	}
	all, err := List(outputDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("checkpoint: latest: %s does not exist: %w", outputDir, ErrNoCheckpoint)
	}
	if err != nil {
		return "", fmt.Errorf("checkpoint: latest: %w", err)
	}
	if len(all) == 0 {
		return "", fmt.Errorf("checkpoint: latest: %s: %w", outputDir, ErrNoCheckpoint)
	}
	var broken []error
	for _, c := range all {
		if err := check(c.Path); err != nil {
			logger.Warn("checkpoint: skipping a broken checkpoint", "path", c.Path, "err", err)
			broken = append(broken, fmt.Errorf("%s: %w", c.Path, err))
			continue
		}
		return c.Path, nil
	}
	return "", fmt.Errorf("checkpoint: latest: every checkpoint in %s is broken: %w", outputDir, errors.Join(broken...))
}

// Prune deletes the oldest complete checkpoint-N folders of outputDir that
// mine accepts beyond the newest keep; keep 0 keeps them all. It never
// deletes keepPath (the checkpoint just written), folders mine refuses
// (another run's), broken ones or copies moved aside.
func Prune(outputDir string, keep int, keepPath string, mine func(dir string) bool) error {
	if keep <= 0 {
		return nil
	}
	all, err := List(outputDir)
	if err != nil {
		return fmt.Errorf("checkpoint: prune: %w", err)
	}
	kept := 0
	for _, c := range all {
		if c.Aside {
			continue
		}
		if err := Verify(c.Path, false); err != nil || !mine(c.Path) {
			continue
		}
		if c.Path == keepPath || kept < keep {
			kept++
			continue
		}
		if err := os.RemoveAll(c.Path); err != nil {
			return fmt.Errorf("checkpoint: prune: %w", err)
		}
	}
	return nil
}

// WriteFileSync writes data to path and syncs it.
func WriteFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteFileAtomic replaces path with data through a temporary file
// (atomicfile.Write: synced, renamed into place, removed on an error).
func WriteFileAtomic(path string, data []byte) error {
	return atomicfile.Write(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// SyncDir makes a rename in dir durable (best effort).
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

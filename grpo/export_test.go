package grpo

// SetSaveHook sets the function Save calls at each stage of a checkpoint
// write ("files", "manifest", "aside", "renamed"); nil removes it.
func SetSaveHook(f func(stage string)) { saveHook = f }

// LockOutputDir takes dir's run lock as a running trainer does.
func LockOutputDir(dir string) (func(), error) { return lockOutputDir(dir) }

// LockingSupported reports whether output folders are locked here.
const LockingSupported = lockingSupported

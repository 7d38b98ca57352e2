package grpo

// SetSaveHook sets the function Save calls at each stage of a checkpoint
// write ("files", "manifest", "aside", "renamed"); nil removes it.
func SetSaveHook(f func(stage string)) { saveHook = f }

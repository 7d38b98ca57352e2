// Package checkpoint is the on-disk protocol of a training run's output
// folder: crash-consistent checkpoint folders with a manifest, finding
// the newest complete one, pruning old ones, the folder's lock, and the
// rules that keep two runs from mixing their files.
//
// # Checkpoints
//
// A checkpoint is a folder outputDir/checkpoint-<step>. Write fills a
// temporary folder with the caller's files, writes manifest.json (every
// file with its size and SHA-256) last, syncs, and renames the folder into
// place; re-saving a step moves the old copy aside first and deletes it
// only once the new one is in. After a kill at any moment, Latest finds
// the newest complete checkpoint and Tidy (called when a run starts)
// removes the temporary folders and settles a copy left aside. Verify
// checks a folder against its manifest; its errors, and those of readers
// that use Corruptf, wrap ErrCorrupt and name the file.
//
//	path, err := checkpoint.Write(dir, step, func(tmp string) error {
//		return checkpoint.WriteFileSync(filepath.Join(tmp, "state.json"), state)
//	}, nil)
//
// What goes inside is the caller's: grpo.Trainer writes its trainer state,
// variables, rollouts and the policy's weights, and grpo.LatestCheckpoint
// is Latest with the trainer's checks of those files.
//
// # The output folder
//
// A running trainer holds the folder's lock (Lock): another run there is
// refused with an error wrapping ErrLocked. A program that writes into
// the folder before training (a model it builds, a warm start) takes the
// lock itself first and hands it to the trainer (grpo.Trainer.OutputLock).
// A fresh run refuses a folder holding another run's checkpoints with an
// *OutputDirInUseError (wrapping ErrOutputDirInUse) unless told to
// overwrite it; CheckOutputDir makes that check without writing anything,
// and Claim makes the folder the new run's. The run's logs, MetricsFile
// and RolloutsFile, sit beside the checkpoints.
package checkpoint

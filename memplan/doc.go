// Package memplan estimates the memory a training run will need before it
// starts, and can hold Go's garbage collector to that estimate while it
// runs.
//
// Estimate takes a Request (the model's config.json, how its weights are
// held, the LoRA rank and the trainer settings that size a run) and
// returns a Plan: one Item per part (weights, LoRA masters and AdamW
// state, generation's KV cache, the activations the backward pass keeps,
// the logits, workspace, Go runtime) and the peak. The figures are
// estimates calibrated against measured peak RSS. Format prints the plan;
// Check returns an *OutOfMemoryError naming the settings to lower when
// the peak exceeds a budget:
//
//	plan, err := memplan.Estimate(memplan.Request{Model: cfg, Train: grpoCfg.MemorySettings(), LoRARank: 16, Storage: model.StorageNF4})
//	if err != nil {
//		return err
//	}
//	budget := memplan.Available() // MemAvailable and the cgroup limit, plus this process's RSS
//	plan.Format(os.Stdout, budget.Bytes, budget.Source)
//	if err := plan.Check(budget.Bytes, budget.Source); err != nil {
//		return err // *memplan.OutOfMemoryError
//	}
//
// grpo.Trainer does this before step 0 for an LMPolicy, against
// Trainer.Memory (nil: Available).
//
// # Process-wide settings are opt-in
//
// Nothing here reads the environment or changes the process unless asked:
// BudgetFromEnv reads GRPOKIT_MEMORY_LIMIT (a size, or "off") for programs
// that honour it, as the grpokit command and the examples do; LimitGC
// sets Go's memory limit (debug.SetMemoryLimit) for a run and its Restore
// puts the previous one back. grpo.Trainer calls LimitGC only when its
// GCLimit option is set.
package memplan

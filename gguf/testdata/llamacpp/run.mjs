// Runs GGUF files with llama.cpp (the prebuilt binding of the npm package
// node-llama-cpp) for the GGUF export test. Reads a list of jobs as JSON on
// stdin, one per file:
//   [{"model": "file.gguf",
//     "vocabOnly": true,                         // optional: load the vocabulary only (no tensors needed)
//     "tokenize": ["text", ...],                 // tokenized with special tokens parsed, no BOS added
//     "generate": [{"prompt": [ids], "n": 12}],  // greedy continuations of token ids
//     "probs": [[ids], ...]}]                    // next-token probabilities after each prefix of ids
// and writes one result per job on stdout:
//   [{"tokens": [[ids]], "generated": [[ids]],
//     "probs": [[[[id, p], ...] per position] per prompt]}]   // the 32 most likely ids per position
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const jobs = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: 1});
const results = [];
for (const job of jobs) {
    const start = Date.now();
    const model = await llama.loadModel({modelPath: job.model, gpuLayers: 0, vocabOnly: job.vocabOnly ?? false});
    const out = {tokens: [], generated: [], probs: []};
    for (const text of job.tokenize ?? []) {
        out.tokens.push(Array.from(model.tokenize(text, true)));
    }
    if ((job.generate ?? []).length + (job.probs ?? []).length > 0) {
        const context = await model.createContext({contextSize: 256, batchSize: 256, sequences: 1, threads: 1,
            // keys and values in float32: llama.cpp's default F16 cache would blur the F32 comparison
            experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32", flashAttention: false});
        const sequence = context.getSequence();
        for (const g of job.generate ?? []) {
            await sequence.clearHistory();
            const ids = [];
            for await (const token of sequence.evaluate(g.prompt, {temperature: 0})) {
                ids.push(token);
                if (ids.length >= g.n) break;
            }
            out.generated.push(ids);
        }
        for (const prompt of job.probs ?? []) {
            await sequence.clearHistory();
            const input = prompt.map((t) => [t, {generateNext: {probabilities: true}}]);
            const res = await sequence.controlledEvaluate(input);
            const rows = [];
            for (let i = 0; i < prompt.length; i++) {
                const p = res[i]?.next?.probabilities;
                const top = p ? Array.from(p.entries()).sort((a, b) => b[1] - a[1]).slice(0, 32) : [];
                rows.push(top);
            }
            out.probs.push(rows);
        }
        await context.dispose();
    }
    await model.dispose();
    results.push(out);
    process.stderr.write(`${job.model}: ${Date.now() - start} ms\n`);
}
await llama.dispose();
process.stdout.write(JSON.stringify(results));

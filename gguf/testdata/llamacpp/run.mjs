// Runs a GGUF file with llama.cpp (the prebuilt binding of the npm package
// node-llama-cpp) for the GGUF export test. Reads a job as JSON on stdin:
//   {"model": "file.gguf",
//    "tokenize": ["text", ...],                 // texts to tokenize, special tokens parsed, no BOS added
//    "generate": [{"prompt": [ids], "n": 12}],  // greedy continuations from token ids
//    "probs": [[ids], ...]}                     // next-token probabilities after each prefix of ids
// and writes {"tokens": [[ids]], "generated": [[ids]], "probs": [[[p(id)...]]]} on stdout.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: job.model, gpuLayers: 0});
const out = {tokens: [], generated: [], probs: []};

for (const text of job.tokenize ?? []) {
    out.tokens.push(Array.from(model.tokenize(text, true)));
}

const context = await model.createContext({contextSize: 512, batchSize: 512, sequences: 1});
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
    const res = await sequence.controlledEvaluate(input, {});
    // For each position, the probabilities of every token id (dense).
    const rows = [];
    for (let i = 0; i < prompt.length; i++) {
        const dense = new Array(model.tokens.length ?? 0).fill(0);
        const p = res[i]?.next?.probabilities;
        if (p) for (const [tok, v] of p) dense[tok] = v;
        rows.push(dense);
    }
    out.probs.push(rows);
}
await context.dispose();
await model.dispose();
await llama.dispose();
process.stdout.write(JSON.stringify(out));

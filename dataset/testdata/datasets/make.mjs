// Writes the dataset fixtures of dataset_file_test.go with DuckDB, an
// independent Parquet and JSON writer: each table goes to NAME.parquet
// and, as DuckDB's own JSON lines, to NAME.jsonl, the reference the Go
// reader's Parquet rows are compared with. The columns follow Hugging Face
// datasets' layouts (GSM8K's question/answer strings, TRL's
// conversational prompt as a list of {role, content} structs, a messages
// column, sharded train-0000N-of-0000M files).
//
//   npm install @duckdb/node-api@1.5.6-r.1 && node make.mjs
import { DuckDBInstance } from '@duckdb/node-api';

const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const run = (sql) => c.run(sql);

await run(`CREATE TABLE plain AS SELECT * FROM (VALUES
  ('Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?',
   'Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72',
   1::INTEGER, 0.25::DOUBLE, true, ['arithmetic', 'two-step']),
  ('Combien font 7 × 8 ? Répondez « en chiffres ».', '56', 2, NULL, false, []::VARCHAR[]),
  ('数一数：一、二、三', '3', 3, 1.5, NULL, NULL),
  (repeat('long prompt ', 2000), '', 4, -2.0, true, ['x'])
) t(question, answer, id, difficulty, verified, tags)`);

await run(`CREATE TABLE conversational AS
  SELECT [{'role': 'system', 'content': 'Answer with a number.'},
          {'role': 'user', 'content': 'What is ' || i || ' + ' || i || '?'}] AS prompt,
         (2 * i)::BIGINT AS answer,
         'src-' || (i % 3) AS source
  FROM range(0, 300) r(i)`);

await run(`CREATE TABLE messages AS SELECT * FROM (VALUES
  ([{'content': 'Say hi.', 'role': 'user'}, {'content': 'hi', 'role': 'assistant'}]),
  ([{'content': 'Be brief.', 'role': 'system'}, {'content': 'Name a colour.', 'role': 'user'}, {'content': 'red', 'role': 'assistant'}]),
  ([{'content': 'No reply yet.', 'role': 'user'}])
) t(messages)`);

await run(`CREATE TABLE null_prompt AS SELECT * FROM (VALUES
  ('first', '1'), (NULL, '2'), ('third', '3')) t(prompt, answer)`);

const out = (name, opts) => Promise.all([
  run(`COPY ${name} TO '${name}.parquet' (FORMAT parquet${opts ? ', ' + opts : ''})`),
  run(`COPY ${name} TO '${name}.jsonl' (FORMAT json)`),
]);
await out('plain', "COMPRESSION snappy");
// Many small row groups, and zstd, as large Hub shards have.
await out('conversational', "COMPRESSION zstd, ROW_GROUP_SIZE 64");
await out('messages', "COMPRESSION uncompressed");
await out('null_prompt');

// Two shards named as the Hub names them; read in name order they are the
// conversational table's rows in order.
await run(`COPY (SELECT * FROM conversational LIMIT 150) TO 'train-00000-of-00002.parquet' (FORMAT parquet)`);
await run(`COPY (SELECT * FROM conversational OFFSET 150) TO 'train-00001-of-00002.parquet' (FORMAT parquet)`);

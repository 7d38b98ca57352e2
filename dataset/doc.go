// Package dataset holds the prompts a trainer learns from: the Example
// type (a plain-text prompt, a chat conversation or token ids, with the
// reference answer and metadata rewards see), the Dataset interface the
// trainers read, and readers for the files Hugging Face datasets come in.
//
// A Dataset is finite and indexable, and must return the same Example for
// the same index every time: the trainer derives its order from the index
// and its seed, which is what makes a resumed run exact. SliceDataset is
// the Dataset of a slice.
//
// # Reading files
//
// LoadDataset reads Parquet (the Hub's own format, one file or a glob of
// shards such as train-*-of-00002.parquet), JSON lines and JSON arrays,
// optionally gzipped. ReadJSONL reads JSON lines from any io.Reader.
// JSONLFields names the columns to read; its zero value reads TRL's column
// names ("prompt" or "messages" for the prompt, "answer" for
// the reference answer):
//
//	data, err := dataset.LoadDataset("gsm8k/train-*.parquet", dataset.JSONLFields{Prompt: "question"})
//	if err != nil {
//		return err // names the file, the row and the field
//	}
//	ex, _ := data.Example(0)
//	fmt.Println(ex.Text())
//
// Bad input gets an error naming the file, the row and the field; a
// damaged Parquet file is an error, never a panic.
//
// A conversational row's "prompt" (a list of messages) becomes
// Example.Messages; the policy (grpo.LMPolicy) turns messages into tokens
// with the model's chat template.
package dataset

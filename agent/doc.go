// Package agent makes tool-calling trajectories for GRPO: tools are typed
// Go functions, rendered and parsed through the model's own chat template,
// run safely, and a trajectory is the whole conversation of one rollout,
// with a mask that tells the model's tokens from the inserted ones.
//
// # Tools
//
// A tool is a Go function of a context and an arguments struct:
//
//	type WeatherArgs struct {
//		City string `json:"city" desc:"the city name"`
//		Unit string `json:"unit,omitempty" enum:"celsius,fahrenheit"`
//	}
//	weather, err := agent.NewTool("weather", "Current weather of a city.",
//		func(ctx context.Context, a WeatherArgs) (string, error) { ... })
//
// Its JSON Schema (the OpenAI / Hugging Face function format that chat
// templates print from their tools variable) comes from the struct's
// fields and tags; no schema is written by hand. An Executor runs calls
// concurrently, each with a timeout; an unreadable call, an unknown tool
// name, arguments that do not fit the schema, the tool's error, a panic
// and a timeout all become a failed Result whose {"error": "..."} text the
// model reads, counted as a failure, never a crash. Calculator and Dates
// are built in (Builtin finds them by name).
//
// # Formats
//
// A Format reads the calls in a model's turn and says how results go back:
// Hermes for Qwen2.5 and Qwen3 (<tool_call>{"name": …, "arguments": …}
// </tool_call>), Llama3 for Llama 3.1 and 3.2 ({"name": …, "parameters":
// …}), Gemma for Gemma 3 (a convention: ```tool_code blocks, results in a
// user turn of ```tool_output blocks, as its template has no tool role)
// and Plain for the tiny models grpokit trains from scratch
// (<call>calc 12*34</call>, then <result>408</result>). DetectFormat picks
// one from a chat template. A Renderer checks, before any rollout, that the
// template renders the tools variable, assistant tool_calls and tool
// results (the plain Llama 3 template drops them: that is an error naming
// what is dropped), then renders prompts and the tokens inserted after a
// turn with calls.
//
// # Trajectories
//
// A Runner makes G trajectories per prompt. Every turn, all unfinished
// trajectories of the batch are continued in one batched generation; the
// calls of every trajectory are parsed and run concurrently; the results,
// rendered by the template, are appended; and so on until a trajectory
// ends a turn without a call, its turn is cut by MaxCompletionLength
// (which bounds the whole trajectory, model and inserted tokens, as in
// TRL), or MaxToolCallingIterations rounds of calls are done. A result
// that would pass MaxCompletionLength is dropped and the trajectory ends,
// as TRL does. Each continuation is exactly the previous tokens plus the
// new ones: a trajectory is never re-rendered or re-tokenized. Its Mask is
// 1 for the model's tokens and 0 for inserted ones, so a trainer gives the
// inserted ones no loss, KL or entropy and leaves them out of every
// normalizer.
//
// An Environment (TRL's environment_factory) is per-trajectory state: the
// Runner keeps one instance per trajectory, resets it before the
// trajectory (its reset text is appended to the prompt), offers its tools,
// and an environment that is a Rewarder scores its trajectory.
package agent

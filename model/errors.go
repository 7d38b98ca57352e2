package model

import (
	"errors"
	"fmt"
)

var (
	// ErrMissingWeight is wrapped by WeightError when a tensor is absent.
	ErrMissingWeight = errors.New("model: missing weight")
	// ErrShapeMismatch is wrapped by WeightError when a tensor's shape
	// disagrees with config.json.
	ErrShapeMismatch = errors.New("model: weight shape mismatch")
	// ErrPromptTooLong is returned when a prompt plus the tokens to generate
	// do not fit in the model's context (max_position_embeddings).
	ErrPromptTooLong = errors.New("model: prompt too long")
)

// WeightError describes one weight that is missing (Got == nil) or whose
// shape disagrees with the configuration.
type WeightError struct {
	Name      string
	Want, Got []int
}

func (e *WeightError) Error() string {
	if e.Got == nil {
		return fmt.Sprintf("model: missing weight %q (want shape %v)", e.Name, e.Want)
	}
	return fmt.Sprintf("model: weight %q has shape %v, config.json implies %v", e.Name, e.Got, e.Want)
}

// Unwrap returns ErrMissingWeight or ErrShapeMismatch.
func (e *WeightError) Unwrap() error {
	if e.Got == nil {
		return ErrMissingWeight
	}
	return ErrShapeMismatch
}

// catch turns a panic raised while building or running a graph into an
// error prefixed with what, so no panic crosses the public API.
func catch(what string, err *error) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok {
			*err = fmt.Errorf("model: %s: %w", what, e)
		} else {
			*err = fmt.Errorf("model: %s: %v", what, r)
		}
	}
}

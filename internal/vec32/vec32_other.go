//go:build !amd64 || purego

package vec32

// registerArch adds nothing: only the portable family exists here.
func registerArch() {}

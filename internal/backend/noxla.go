//go:build !cgo || noxla

package backend

// xlaCompiledIn says whether the XLA backend (cgo) is part of this build:
// not with CGO_ENABLED=0 or the noxla tag, where grpokit is pure Go.
const xlaCompiledIn = false

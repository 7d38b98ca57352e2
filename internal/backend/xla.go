//go:build cgo && !noxla

package backend

import "github.com/gomlx/gomlx/backends/xla"

// xlaCompiledIn says whether the XLA backend (cgo) is part of this build.
const xlaCompiledIn = true

func init() {
	// Never let the XLA backend reach for the network to install a plugin.
	xla.EnableAutoInstall(false)
}

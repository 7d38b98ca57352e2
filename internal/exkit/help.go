package exkit

import "flag"

// ErrHelp is returned by Parse when -h or -help was asked for (the usage
// has been printed).
var ErrHelp = flag.ErrHelp

package exkit

import "github.com/grpokit/grpokit/plot"

// The examples' plots come from package plot.
type Line = plot.Line

// PlotLines is plot.Lines; MetricLines is plot.MetricLines.
var (
	PlotLines   = plot.Lines
	MetricLines = plot.MetricLines
)

package exkit

import (
	"fmt"
	"image/color"

	"github.com/grpokit/grpokit/grpo"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Line is one series of a plot.
type Line struct {
	Name string
	X, Y []float64
}

var palette = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 140, G: 86, B: 75, A: 255},
}

// PlotLines writes a PNG line plot of lines to path.
func PlotLines(path, title, xLabel, yLabel string, lines ...Line) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	for i, l := range lines {
		if len(l.X) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(l.X))
		for j := range l.X {
			xy[j].X, xy[j].Y = l.X[j], l.Y[j]
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(l.Name, line)
	}
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// MetricLines reads metrics.jsonl and returns one Line per key, with the
// raw values and a moving average over window steps (window ≤ 1: raw only).
func MetricLines(path string, window int, keys ...string) ([]Line, error) {
	ms, err := grpo.ReadMetrics(path)
	if err != nil {
		return nil, err
	}
	var out []Line
	for _, k := range keys {
		x, y := grpo.Series(ms, k)
		out = append(out, Line{Name: k, X: x, Y: y})
		if window > 1 && len(y) > window {
			out = append(out, Line{Name: fmt.Sprintf("%s (mean of %d)", k, window), X: x, Y: MovingAverage(y, window)})
		}
	}
	return out, nil
}

// MovingAverage returns the trailing mean of y over window values.
func MovingAverage(y []float64, window int) []float64 {
	out := make([]float64, len(y))
	sum := 0.0
	for i, v := range y {
		sum += v
		if i >= window {
			sum -= y[i-window]
		}
		out[i] = sum / float64(min(i+1, window))
	}
	return out
}

// Cumulative returns the running sum of y.
func Cumulative(y []float64) []float64 {
	out := make([]float64, len(y))
	s := 0.0
	for i, v := range y {
		s += v
		out[i] = s
	}
	return out
}

package plot

import (
	"fmt"
	"image/color"
	"os"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/grpokit/grpokit/internal/atomicfile"
)

// Line is one series of a plot.
type Line struct {
	Name string
	X, Y []float64
}

// palette holds the line colours, used in turn (matplotlib's first six).
var palette = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 140, G: 86, B: 75, A: 255},
}

// Width and Height are the size of the axes area of every figure; the
// legend strip is added on the right.
const (
	Width  = 8 * vg.Inch
	Height = 4.5 * vg.Inch
)

// Lines writes a PNG line plot of lines to path (atomically: a temporary
// file renamed into place). The legend is drawn in a strip right of the
// axes, so it never hides data. Lines with no points are skipped; it is an
// error when none has any, or when a line's X and Y differ in length.
func Lines(path, title, xLabel, yLabel string, lines ...Line) error {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	legend := gplot.NewLegend()
	legend.Left, legend.Top = true, true
	var legendW vg.Length
	drawn := 0
	for i, l := range lines {
		if len(l.X) != len(l.Y) {
			return fmt.Errorf("plot %s: line %q has %d x and %d y values", path, l.Name, len(l.X), len(l.Y))
		}
		if len(l.X) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(l.X))
		for j := range l.X {
			xy[j].X, xy[j].Y = l.X[j], l.Y[j]
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot %s: line %q: %w", path, l.Name, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		legend.Add(l.Name, line)
		legendW = max(legendW, legend.TextStyle.Width(l.Name))
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("plot %s: no data", path)
	}
	legendW += legend.ThumbnailWidth + 3*vg.Millimeter
	img := vgimg.New(Width+legendW, Height)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
	top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	legend.Draw(draw.Crop(dc, Width+2*vg.Millimeter, 0, 0, -top))
	if err := atomicfile.Write(path, func(f *os.File) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		return err
	}); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// MovingAverage returns the trailing mean of y over window values (the
// first values average over what there is).
func MovingAverage(y []float64, window int) []float64 {
	window = max(1, window)
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

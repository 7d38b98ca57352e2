package plot_test

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/plot"
	"gonum.org/v1/plot/vg"
)

func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for s := 1; s <= 20; s++ {
		fmt.Fprintf(&b, `{"step": %d, "reward": %g, "rewards/format/mean": %g, "rewards/correct/mean": %g, "loss": 0.1, "frac_reward_zero_std": 0.5}`+"\n",
			s, float64(s)/20, float64(s)/40, float64(s)/40)
	}
	path := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := plot.Metrics(path, dir, plot.Options{Window: 5, Title: "toy"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if want := []string{"reward.png", "loss.png", "frac_reward_zero_std.png"}; !slices.Equal(names, want) {
		t.Fatalf("wrote %v, want %v", names, want)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The legend is right of the axes area: the strip beyond Width holds
	// the legend's line thumbnails, in the palette's first colour.
	dpi := float64(img.Bounds().Dy()) / float64(plot.Height/vg.Inch)
	axesW := int(float64(plot.Width/vg.Inch) * dpi)
	if img.Bounds().Dx() <= axesW+20 {
		t.Fatalf("image %v has no legend strip beyond x=%d", img.Bounds(), axesW)
	}
	if !hasColor(img, image.Rect(axesW, 0, img.Bounds().Dx(), img.Bounds().Dy()), 31, 119, 180) {
		t.Error("no legend thumbnail in the strip right of the axes")
	}
}

func hasColor(img image.Image, r image.Rectangle, R, G, B uint8) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == R && uint8(g>>8) == G && uint8(b>>8) == B {
				return true
			}
		}
	}
	return false
}

func TestLinesErrors(t *testing.T) {
	dir := t.TempDir()
	if err := plot.Lines(filepath.Join(dir, "a.png"), "t", "x", "y", plot.Line{Name: "empty"}); err == nil {
		t.Error("no data: no error")
	}
	if err := plot.Lines(filepath.Join(dir, "a.png"), "t", "x", "y", plot.Line{Name: "bad", X: []float64{1}, Y: nil}); err == nil {
		t.Error("x/y length mismatch: no error")
	}
}

func TestMovingAverage(t *testing.T) {
	got := plot.MovingAverage([]float64{1, 3, 5, 7}, 2)
	if want := []float64{1, 2, 4, 6}; !slices.Equal(got, want) {
		t.Errorf("MovingAverage = %v, want %v", got, want)
	}
	if got := plot.Cumulative([]float64{1, 2, 3}); !slices.Equal(got, []float64{1, 3, 6}) {
		t.Errorf("Cumulative = %v", got)
	}
}

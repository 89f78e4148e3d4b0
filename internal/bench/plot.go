package bench

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// lineColors are the lines' colours, in the order the lines are drawn.
var lineColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// WritePlot draws confirmed/s and p99 intake-to-confirmed latency over time
// for every anchoring phase of every deployment, one chart above the other,
// as a PNG.
func (r *Report) WritePlot(path string) error {
	rate := plot.New()
	rate.Title.Text = "confirmed evidence per second"
	rate.X.Label.Text = "seconds since the phase started"
	rate.Y.Label.Text = "confirmed/s"
	lat := plot.New()
	lat.Title.Text = "p99 intake → confirmed of the evidence confirmed that second"
	lat.X.Label.Text = "seconds since the phase started"
	lat.Y.Label.Text = "p99 (s)"
	lines := 0
	for _, d := range r.Deployments {
		for _, a := range []*AnchorReport{d.Batched, d.Bulk, d.PerEvidence} {
			if a == nil || len(a.Series) == 0 {
				continue
			}
			name := fmt.Sprintf("%s%s (max items %d)", r.prefix(d.Name), a.Mode, a.BatchMaxItems)
			if err := plotPhase(rate, lat, name, a, lineColors[lines%len(lineColors)]); err != nil {
				return err
			}
			lines++
		}
	}
	for _, p := range []*plot.Plot{rate, lat} {
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
	}
	const width, height = 10 * vg.Inch, 8 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	plots := [][]*plot.Plot{{rate}, {lat}}
	canvases := plot.Align(plots, tiles, dc)
	rate.Draw(canvases[0][0])
	lat.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// plotPhase adds one anchoring phase's confirmed/s to rate and its p99 to
// lat, as lines called name.
func plotPhase(rate, lat *plot.Plot, name string, a *AnchorReport, c color.Color) error {
	conf := make(plotter.XYs, len(a.Series))
	var p99 plotter.XYs
	for i, p := range a.Series {
		conf[i] = plotter.XY{X: p.T, Y: float64(p.Confirmed)}
		if p.Confirmed > 0 {
			p99 = append(p99, plotter.XY{X: p.T, Y: p.P99MS / 1000})
		}
	}
	if err := addLine(rate, name, conf, c); err != nil {
		return err
	}
	if len(p99) == 0 {
		return nil
	}
	return addLine(lat, name, p99, c)
}

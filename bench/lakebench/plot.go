//go:build plot

package main

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

// plotting: this build (-tags plot) draws bench/scale.png.
const plotting = true

// plotScale draws two panels against catalog size (log scale): GetTables
// latency (cold first request and warm) and discovery's RSS after load, and
// writes them to path as a PNG.
func plotScale(path string, points []scalePoint) error {
	xy := func(f func(scalePoint) float64) plotter.XYs {
		out := make(plotter.XYs, len(points))
		for i, p := range points {
			out[i].X, out[i].Y = float64(p.tables), f(p)
		}
		return out
	}
	panel := func(title, ylabel string, lines ...any) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "tables in the catalog"
		p.Y.Label.Text = ylabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min = 0
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		if err := addLines(p, lines...); err != nil {
			return nil, err
		}
		return p, nil
	}
	lat, err := panel("GetTables with schemas, 100-table tenant", "p50 ms",
		"cold first request", xy(func(p scalePoint) float64 { return p.coldP50 }),
		"warm", xy(func(p scalePoint) float64 { return p.warmP50 }))
	if err != nil {
		return err
	}
	rss, err := panel("discovery RSS after load", "MB",
		"RSS", xy(func(p scalePoint) float64 { return p.loadRSS }))
	if err != nil {
		return err
	}
	const w, h = 12 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{{lat, rss}}, tiles, dc)
	lat.Draw(canvases[0][0])
	rss.Draw(canvases[0][1])
	png := vgimg.PngCanvas{Canvas: img}
	return saveImage(path, png)
}

// addLines adds name, points pairs as lines with point marks, each its own
// colour.
func addLines(p *plot.Plot, pairs ...any) error {
	colors := []color.Color{color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.RGBA{R: 44, G: 160, B: 44, A: 255}}
	for i := 0; i+1 < len(pairs); i += 2 {
		name, ok1 := pairs[i].(string)
		pts, ok2 := pairs[i+1].(plotter.XYs)
		if !ok1 || !ok2 {
			return fmt.Errorf("addLines: want name, plotter.XYs pairs")
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		c := colors[(i/2)%len(colors)]
		l.Color, s.Color = c, c
		p.Add(l, s)
		p.Legend.Add(name, l, s)
	}
	return nil
}

func saveImage(path string, png vgimg.PngCanvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := png.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

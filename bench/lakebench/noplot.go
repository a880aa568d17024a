//go:build !plot

package main

import "errors"

// plotting is false in a build without the plot tag: the plotting library
// (gonum) is built only by `make bench` (go run -tags plot), not by the
// test command's quick run.
const plotting = false

func plotScale(string, []scalePoint) error {
	return errors.New("built without -tags plot")
}

package backfill

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Bar is a Progress that draws "\r[####......] n/total" on W for phases of
// MinTotal steps or more, at most every Every (and always at the last
// step), and ends the line when the phase is done.
type Bar struct {
	W io.Writer
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// MinTotal is the smallest phase drawn. Default 20.
	MinTotal int
	// Every is the least time between redraws. Default 200 ms.
	Every time.Duration
	// Width is the bar's width in characters. Default 30.
	Width int

	n, total int
	last     time.Time
	drawn    bool
}

var _ Progress = (*Bar)(nil)

// Start begins a phase of total steps.
func (b *Bar) Start(total int) {
	b.n, b.total, b.last, b.drawn = 0, total, time.Time{}, false
}

// Step records one step and redraws when due.
func (b *Bar) Step() {
	b.n++
	minTotal, every, width, now := b.MinTotal, b.Every, b.Width, b.Now
	if minTotal <= 0 {
		minTotal = 20
	}
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	if width <= 0 {
		width = 30
	}
	if now == nil {
		now = time.Now
	}
	t := now()
	if b.total < minTotal || (b.drawn && t.Sub(b.last) < every && b.n < b.total) {
		return
	}
	b.last, b.drawn = t, true
	filled := width * b.n / b.total
	fmt.Fprintf(b.W, "\r[%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), b.n, b.total)
}

// Done ends the phase's line if one was drawn.
func (b *Bar) Done() {
	if b.drawn {
		fmt.Fprintln(b.W)
		b.drawn = false
	}
}

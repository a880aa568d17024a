package sqlcatalog

import (
	"fmt"
	"sync"
)

// Budget bounds the memory that SQL results hold in flight across every
// engine of a process: while a statement's rows are collected and laid out
// as Arrow, and while its result streams to a client. Work reserves bytes
// before it holds them (a Reservation) and gives them back when done; a
// reservation the budget cannot hold now fails at once (ErrBusy), never
// waits, so no request queues past its own deadline behind results that
// a slow or absent reader keeps in flight. It is safe for concurrent use.
type Budget struct {
	total int64

	mu   sync.Mutex
	used int64
	peak int64
	// refused counts reservations refused.
	refused uint64
}

// NewBudget returns a budget of total bytes (at least 1).
func NewBudget(total int64) *Budget { return &Budget{total: max(total, 1)} }

// Total is the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// BudgetStats describe a Budget.
type BudgetStats struct {
	// Total, Used and Peak: the budget, what is reserved now and the most
	// ever reserved at once, in bytes.
	Total, Used, Peak int64
	// Refused counts reservations the budget could not hold.
	Refused uint64
}

// Stats reports the budget.
func (b *Budget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{Total: b.total, Used: b.used, Peak: b.peak, Refused: b.refused}
}

// Reserve returns an empty reservation against b. A nil Budget gives a
// reservation that holds nothing and refuses nothing.
func (b *Budget) Reserve() *Reservation { return &Reservation{b: b} }

// Reservation is bytes held against a Budget. It is used by one goroutine
// at a time; Release may be called any number of times.
type Reservation struct {
	b *Budget
	n int64
}

// Bytes is what r holds.
func (r *Reservation) Bytes() int64 { return r.n }

// Grow reserves n bytes more, or returns an *Error of kind ErrBusy when
// the budget cannot hold them now (r keeps what it held).
func (r *Reservation) Grow(n int64) error {
	if r == nil || r.b == nil || n <= 0 {
		return nil
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.total {
		b.refused++
		return &Error{Kind: ErrBusy, Offset: -1, Msg: fmt.Sprintf(
			"sql: results in flight hold the server's budget of %d MiB (all tenants' statements); retry shortly, or narrow the statement with WHERE or LIMIT", b.total>>20)}
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	r.n += n
	return nil
}

// Shrink gives back n of the bytes r holds (all of them when n is more).
func (r *Reservation) Shrink(n int64) {
	if r == nil || r.b == nil || n <= 0 {
		return
	}
	n = min(n, r.n)
	r.b.mu.Lock()
	r.b.used -= n
	r.b.mu.Unlock()
	r.n -= n
}

// Release gives back everything r holds.
func (r *Reservation) Release() {
	if r != nil {
		r.Shrink(r.n)
	}
}

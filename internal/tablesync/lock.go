package tablesync

import (
	"context"
	"hash/maphash"

	"github.com/lake-catalog/lake/pkg/catalog"
)

// syncStripes is how many locks the syncs of one Syncer are spread over.
const syncStripes = 64

// lockTable waits for the syncs of ref in this process to finish (a lock
// of one of syncStripes stripes, by ref), or for ctx: two syncs of one
// table (a write's own and a POST …/sync) then run one after the other,
// the second starting from the state the first recorded, instead of
// racing for the same metadata version. Syncs in other processes still
// race; the loser fails (icebergsync.ErrExists) and nothing is lost. The
// returned func releases the lock.
func (s *Syncer) lockTable(ctx context.Context, ref catalog.TableRef) (func(), error) {
	s.stripesOnce.Do(func() {
		s.seed = maphash.MakeSeed()
		for i := range s.stripes {
			s.stripes[i] = make(chan struct{}, 1)
		}
	})
	c := s.stripes[maphash.String(s.seed, ref.String())%syncStripes]
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

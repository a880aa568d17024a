package preview

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/lake-catalog/lake/internal/icebergsync"
)

// source is one object as the io.ReaderAt arrow-go's Parquet reader reads
// through (an io.SectionReader over it gives the reader its Seek): every
// read is charged to the preview's byte budget
// before it is made, and made with the context of the reader's call in
// progress.
//
// The context is held here, against the house rule, because io.ReaderAt
// has no context argument: the reader sets it at the start of each Open or
// Next and clears it at the end, so it never outlives the call that passed
// it.
type source struct {
	ctx   context.Context
	files icebergsync.Files
	obj   icebergsync.Object
	// budget is the preview's byte count and cap, shared by its sources.
	budget *budget
	// err is the first error of a read: arrow-go may wrap it without %w
	// or drop it, so the reader asks here what went wrong.
	err error
}

// budget counts the bytes read by one preview against its cap.
type budget struct {
	table string
	read  int64
	max   int64
}

// charge counts n bytes, or refuses them when they would pass the cap.
func (b *budget) charge(n int64) error {
	if b.read+n > b.max {
		return &LimitError{Table: b.table, Limit: "bytes read", Max: b.max}
	}
	b.read += n
	return nil
}

func (s *source) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return err
}

// ReadAt reads from the object; a read past its end is short, with io.EOF.
func (s *source) ReadAt(p []byte, off int64) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= s.obj.Size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), s.obj.Size-off)
	if s.ctx == nil {
		return 0, s.fail(errors.New("read outside a reader call"))
	}
	if err := s.ctx.Err(); err != nil {
		return 0, s.fail(err)
	}
	if err := s.budget.charge(n); err != nil {
		return 0, s.fail(err)
	}
	if err := s.files.ReadAt(s.ctx, s.obj, p[:n], off); err != nil {
		s.budget.read -= n // nothing was read
		return 0, s.fail(err)
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// errNotParquet is a file that does not end like Parquet (the reason says
// how); the reader turns it into a *MismatchError.
type errNotParquet struct{ reason string }

func (e *errNotParquet) Error() string { return e.reason }

// footer reads the object's Parquet footer (the file metadata, without its
// length and magic): first the last guess bytes (at least 8), then the
// rest of the footer when the guess was short. A footer over maxFooter is
// refused before it is read.
func (s *source) footer(guess, maxFooter int64) ([]byte, error) {
	size := s.obj.Size
	if size < 12 {
		return nil, &errNotParquet{fmt.Sprintf("not Parquet: %d bytes, too short", size)}
	}
	n := min(size, max(guess, 8))
	tail := make([]byte, n)
	if _, err := s.ReadAt(tail, size-n); err != nil {
		return nil, err
	}
	switch string(tail[n-4:]) {
	case "PAR1":
	case "PARE":
		return nil, &errNotParquet{"an encrypted Parquet file, which lake does not read"}
	default:
		return nil, &errNotParquet{"not Parquet: the file does not end in PAR1"}
	}
	flen := int64(binary.LittleEndian.Uint32(tail[n-8 : n-4]))
	if flen > size-12 {
		return nil, &errNotParquet{fmt.Sprintf("not Parquet: a footer of %d bytes in a file of %d", flen, size)}
	}
	if flen > maxFooter {
		return nil, &LimitError{Table: s.budget.table, Limit: "footer bytes", Max: maxFooter}
	}
	if flen+8 <= n {
		return tail[n-8-flen : n-8], nil
	}
	buf := make([]byte, flen)
	if _, err := s.ReadAt(buf, size-8-flen); err != nil {
		return nil, err
	}
	return buf, nil
}

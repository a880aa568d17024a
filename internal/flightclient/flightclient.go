// Package flightclient holds the Flight SQL client calls lake's CLI, tests and
// benchmark driver share.
package flightclient

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// TableRow is one GetTables row; Schema holds the table_schema bytes when
// the request included schemas.
type TableRow struct {
	Catalog, Namespace, Name, Type string
	Schema                         []byte
}

// GetTables runs GetTables and DoGet on every endpoint with c, and returns
// the rows.
func GetTables(ctx context.Context, c *flightsql.Client, opts *flightsql.GetTablesOpts) ([]TableRow, error) {
	info, err := c.GetTables(ctx, opts)
	if err != nil {
		return nil, err
	}
	var rows []TableRow
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				r := TableRow{
					Catalog:   rec.Column(0).(*array.String).Value(i),
					Namespace: rec.Column(1).(*array.String).Value(i),
					Name:      rec.Column(2).(*array.String).Value(i),
					Type:      rec.Column(3).(*array.String).Value(i),
				}
				if opts.IncludeSchema {
					r.Schema = append([]byte(nil), rec.Column(4).(*array.Binary).Value(i)...)
				}
				rows = append(rows, r)
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

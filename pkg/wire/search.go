package wire

import "github.com/lake-catalog/lake/pkg/like"

// SearchActionType is the Flight action (DoAction) that searches the
// caller's tenant by table name and column name. Its body is a JSON
// SearchRequest; its answer is a stream of Results, each one JSON
// SearchMatch, in (namespace, table) order. When more than MaxSearchMatches
// tables match, or their JSON passes MaxSearchBytes, the stream carries the
// first ones and ends with one more Result, a JSON SearchTruncated.
//
// Like every other answer it comes from the snapshot in memory, for the
// tenant of the bearer token alone. A pattern that does not compile, or a
// body that is not a SearchRequest, is INVALID_ARGUMENT; no token is
// UNAUTHENTICATED; before the first snapshot it is UNAVAILABLE.
const SearchActionType = "lake.search"

// MaxSearchMatches is the most tables one search returns.
const MaxSearchMatches = 1000

// MaxSearchBytes bounds the JSON of one search's matches together: a
// search stops, with a SearchTruncated whose Limit is the matches sent,
// before passing it (each match is at most MaxMatchBytes).
const MaxSearchBytes = 16 << 20

// MaxSearchBody bounds a search action's body: two patterns and the keys.
const MaxSearchBody = 2*like.MaxPatternBytes + 256

// MaxMatchBytes bounds one SearchMatch's JSON (one Result).
const MaxMatchBytes = 1 << 20

// SearchRequest is the body of a SearchActionType action. Each pattern is
// a Flight SQL LIKE pattern ('%' any run, '_' one character, a backslash
// escapes '%', '_' or itself) of at most like.MaxPatternBytes bytes; an
// empty pattern filters nothing.
type SearchRequest struct {
	// TablePattern matches table names.
	TablePattern string `json:"table_pattern,omitempty"`
	// ColumnPattern matches columns at any depth: a column matches when the
	// pattern matches its name or its dotted path from the top-level field
	// (struct, list, map and union children are walked; a map's children
	// are "key" and "value"). With a column pattern, only tables with a
	// matching column are returned, with those columns; without one, every
	// table the table pattern matches is returned, with no columns.
	ColumnPattern string `json:"column_pattern,omitempty"`
}

// SearchMatch is one table a search found.
type SearchMatch struct {
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	TableType string `json:"table_type"`
	// Columns are the matching columns in schema order (depth first), as
	// many as fit MaxMatchBytes.
	Columns []SearchColumn `json:"columns"`
	// ColumnsTruncated is true when more columns matched than fit: the
	// match's JSON stays within MaxMatchBytes, far below a client's 4 MiB
	// receive limit, whatever the schema.
	ColumnsTruncated bool `json:"columns_truncated,omitempty"`
}

// SearchColumn is one column a column pattern matched.
type SearchColumn struct {
	// Path is the column's field names from the top level, joined by dots.
	Path string `json:"path"`
	// Type is the exact Arrow type, as TypeString writes it
	// ("decimal128(38, 10)", "timestamp[us, tz=UTC]").
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// SearchTruncated is the last Result of a search that stopped at Limit
// matches: MaxSearchMatches, or fewer when their JSON reached
// MaxSearchBytes.
type SearchTruncated struct {
	Truncated bool `json:"truncated"`
	Limit     int  `json:"limit"`
}

package wire

// Bounds of a preview's ?limit= (the registration API's
// GET /v1/tenants/{t}/namespaces/{ns}/tables/{table}/preview, `lake
// preview`, the catalog browser's Preview tab).
const (
	DefaultPreviewLimit = 100
	MaxPreviewLimit     = 1000
)

// Preview is the answer of GET …/tables/{table}/preview?limit=&columns=:
// the table's first rows, read from its files through the vending Door
// (table-scoped credentials, or a local path under local mode's data root)
// as its registered schema says.
//
// Rows hold one JSON value per column, in Columns' order: numbers
// (integers, floats; NaN and ±Inf as the strings "NaN", "Infinity",
// "-Infinity"), strings, booleans and null; timestamps as RFC 3339
// (with a time zone: in UTC, ending "Z"; without one, the wall-clock time
// with no offset), dates as "2006-01-02", times of day as "15:04:05.999…";
// decimals as strings ("12.50"), durations as integers of the type's unit,
// binary as standard base64, lists as arrays, structs as objects, maps as
// arrays of {"key", "value"}, dictionaries as their values.
type Preview struct {
	Tenant    string `json:"tenant"`
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	// Location is the table's location the rows were read under.
	Location string          `json:"location"`
	Columns  []PreviewColumn `json:"columns"`
	Rows     [][]any         `json:"rows"`
	// Limit is the limit the rows were read with.
	Limit int `json:"limit"`
	// Truncated says there are more rows than Rows: the limit was reached
	// and another row was there, or the answer reached its size bound
	// (MaxPreviewAnswerBytes). Stats count what was read, that other row
	// included.
	Truncated bool         `json:"truncated"`
	Stats     PreviewStats `json:"stats"`
}

// MaxPreviewAnswerBytes bounds the rows of one Preview answer, as JSON:
// rows past it are left out and the answer is Truncated. It keeps an
// answer under a Lambda's 6 MB response limit (the register function
// answers the route on AWS).
const MaxPreviewAnswerBytes = 4 << 20

// PreviewColumn is one column of a Preview: its name, its exact Arrow type
// (as pkg/arrowtype.String writes it: "decimal128(18, 2)",
// "timestamp[us, tz=UTC]") and whether it is nullable.
type PreviewColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// PreviewStats count what reading a Preview took.
type PreviewStats struct {
	FilesOpened      int   `json:"files_opened"`
	RowGroupsRead    int   `json:"row_groups_read"`
	RowGroupsSkipped int   `json:"row_groups_skipped"`
	BytesRead        int64 `json:"bytes_read"`
}

// Error codes of a preview.
const (
	// CodePreviewLimit: the preview ran past one of its caps: bytes read,
	// files opened, objects listed, rows, a footer's size (413), its time
	// (504) or the concurrent previews of a tenant (429, Retry-After);
	// the message names the cap.
	CodePreviewLimit = "preview_limit"
	// CodeSchemaMismatch (422): a file at the table's location does not
	// match its registered schema; the message names the file. Rows are
	// never cast to fit.
	CodeSchemaMismatch = "schema_mismatch"
	// CodeNoSchema (409): the table was registered without a schema (a
	// legacy registration), so there is nothing to read its rows as.
	CodeNoSchema = "no_schema"
	// CodePreviewFailed (502): the files could not be read (not Parquet,
	// damaged, the store failing); the message says why.
	CodePreviewFailed = "preview_failed"
)
